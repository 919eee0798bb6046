"""Credentials below every stage: the keyring (and its encrypted-file backend), OAuth
helpers (PKCE, the redirect catcher, the refresh lock), the web page's access token."""
