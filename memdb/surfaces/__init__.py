"""What users touch: ``memdb.open`` and the ``Database``, the ``Memory`` owner handle, the MCP
server and the demo (the ``memdb`` command is ``memdb.cli``)."""
