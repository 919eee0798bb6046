"""The local web page and its JSON API (Starlette, server-rendered, no external assets)."""
