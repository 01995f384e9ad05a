"""Test-only pages: the portal's URLs plus views that exercise the helpers of users.security."""

from django.contrib.admin.models import LogEntry
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.urls import path

from tpp_portal.urls import urlpatterns as portal_urlpatterns
from users.security import get_owned_or_404, require_recent_authentication, sensitive_page


@login_required
def owned_entry(request, pk):
    # LogEntry is a model with a user foreign key that exists in every portal database.
    entry = get_owned_or_404(LogEntry, user=request.user, pk=pk)
    return HttpResponse(f"entry: {entry.object_repr}")


@sensitive_page
def sensitive(request):
    return HttpResponse("account data")


@require_recent_authentication
def pay(request):
    return HttpResponse(f"payment {request.method}")


@require_recent_authentication(max_age=60)
def pay_strict(request):
    return HttpResponse("strict payment")


urlpatterns = [
    *portal_urlpatterns,
    path("test/entries/<str:pk>/", owned_entry, name="test-owned-entry"),
    path("test/sensitive/", sensitive, name="test-sensitive"),
    path("test/pay/", pay, name="test-pay"),
    path("test/pay-strict/", pay_strict, name="test-pay-strict"),
]
