"""The engine: bytes, keys and transactions. The codec, the ordered ``Store`` protocol with its
LMDB and PostgreSQL backends, and M-style globals over them. No pydantic, nothing of episodes."""
