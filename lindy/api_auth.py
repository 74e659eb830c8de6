"""API authentication: the browser session (with CSRF) or a bearer token."""

from ninja.security import HttpBearer, django_auth

from . import services


class BearerToken(HttpBearer):
    def authenticate(self, request, token):
        user = services.api_token_authenticate(key=token)
        if user is not None:
            request.user = user
        return user


AUTH = [BearerToken(), django_auth]
