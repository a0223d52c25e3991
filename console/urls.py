"""Top-level routes."""

from __future__ import annotations

from csp.constants import SELF, UNSAFE_INLINE
from csp.decorators import csp_replace
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from console.oidc import SignOnCallbackView, SignOnStartView, SignOutView
from console.views import LoginPageView, console_app, favicon, healthz, metrics_view

handler404 = "console.views.not_found"

# The Swagger UI (drf-spectacular, self-hosted by its sidecar) under the site's CSP: the split
# view loads its start-up script from a URL instead of inlining it, and the page keeps a small
# inline <style> and Swagger UI's own inline styles, so styles (only) may be inline here. Its
# template adds a bar with the way back to the console.
swagger_ui = csp_replace({"style-src": [SELF, UNSAFE_INLINE]})(
    SpectacularSwaggerSplitView.as_view(url_name="schema", template_name="console/api_docs.html")
)

urlpatterns = [
    path("", console_app, name="home"),
    path("login/", LoginPageView.as_view(), name="login"),
    path("logout/", SignOutView.as_view(), name="logout"),
    # Single sign-on (console/oidc.py): 404 while SLUICE_OIDC_ISSUER is unset.
    path("oidc/authenticate/", SignOnStartView.as_view(), name="oidc_authentication_init"),
    path("oidc/callback/", SignOnCallbackView.as_view(), name="oidc_authentication_callback"),
    path("healthz", healthz, name="healthz"),
    path("favicon.ico", favicon, name="favicon"),
    path("metrics", metrics_view, name="metrics"),
    path("admin/", admin.site.urls),
    path("api/v1/", include("console.api.urls")),
    path("connect/", include("console.api.connect.urls")),
    path("schema-registry/", include("console.api.schema_registry.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", swagger_ui, name="swagger-ui"),
    path("api/auth/", include("rest_framework.urls")),
]
