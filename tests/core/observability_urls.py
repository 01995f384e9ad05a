"""The portal's URLs and a view that fails with personal data in its message (test_observability.py)."""

from django.urls import path

from tpp_portal.urls import urlpatterns as portal_urlpatterns

#: What the failing view puts in its error: a PSU-ID named as such, an IBAN and an e-mail address.
ERROR_TEXT = "refused psu_id=7f9c2a4e-58b1-4c3d-9e0f-1a2b3c4d5e6f for NO9386011117947 (alice.example@example.com)"


def boom(request):
    raise ValueError(ERROR_TEXT)


urlpatterns = [path("boom/", boom), *portal_urlpatterns]
