"""Integrations with agent frameworks, each an optional extra over the public ``memdb`` API
(``memdb.integrations.langgraph``: ``pip install "memdb-agent[langgraph]"``). Nothing here is
imported by ``import memdb``."""
