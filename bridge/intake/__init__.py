"""Getting data in: scheduled sources and watched folders, live pulls, file imports, and
connecting a live source (its OAuth setup)."""
