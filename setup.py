"""Build hook: cffi compiles native/scorer.c, search.c and codec.c into memdb._scorer; MEMDB_PURE_PYTHON=1 skips it (no compiler needed)."""

import os

from setuptools import setup

PURE = os.environ.get("MEMDB_PURE_PYTHON", "").strip().lower() in {"1", "true", "yes"}
setup(cffi_modules=[] if PURE else ["native/build_scorer.py:ffibuilder"])
