"""Payment pages. Initiation (form, review and submission, approval, reconciliation): payments.views_initiation.
The payment's own page is "payment-detail" (``<int:pk>/``): the initiation pages send the user there."""

from django.urls import path

from payments import views_initiation, views_status

initiation_patterns = [
    path("new/", views_initiation.payment_new, name="payment-new"),
    path("new/domestic/", views_initiation.payment_new_domestic, name="payment-new-domestic"),
    path("<int:pk>/review/", views_initiation.payment_review, name="payment-review"),
    path("<int:pk>/edit/", views_initiation.payment_edit, name="payment-edit"),
    path("<int:pk>/delete/", views_initiation.payment_draft_delete, name="payment-draft-delete"),
    path("<int:pk>/approve/", views_initiation.payment_approve, name="payment-approve"),
    path("<int:pk>/reconcile/", views_initiation.payment_reconcile, name="payment-reconcile"),
]

status_patterns = [
    path("", views_status.payment_list, name="payment-list"),
    path("export.csv", views_status.payment_export, name="payment-export"),
    path("<int:pk>/", views_status.payment_detail, name="payment-detail"),
    path("<int:pk>/status.json", views_status.payment_status_json, name="payment-status-json"),
    path("<int:pk>/check/", views_status.payment_check, name="payment-check"),
    path("<int:pk>/cancel/", views_status.payment_cancel, name="payment-cancel"),
    path("<int:pk>/sign/", views_status.payment_sign, name="payment-sign"),
]

urlpatterns = [*initiation_patterns, *status_patterns]
