"""cffi out-of-line API-mode build of native/scorer.c, search.c, blocks.c and codec.c into ``memdb._scorer``.

``setup.py`` names ``ffibuilder`` in ``cffi_modules``, so ``pip install .`` (editable or not)
compiles the scorer; ``python native/build_scorer.py`` builds it in place for development.
Paths are relative to the project root because setuptools runs from there and rejects
absolute source paths in an sdist.

Before the compiler runs, a preflight check turns the two usual failures (no C compiler, no
Python headers) into one line that says what to install, instead of a compiler traceback.
``MEMDB_PURE_PYTHON=1`` at install time skips this file entirely (see setup.py).
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import sys
import sysconfig
from pathlib import Path
from types import ModuleType

from cffi import FFI, VerificationError

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ["native/scorer.c", "native/search.c", "native/blocks.c", "native/codec.c"]
HEADERS = ["native/scorer.h", "native/search.h", "native/blocks.h", "native/codec.h"]


def _load_errors() -> ModuleType:
    """memdb.errors, loaded by path: importing the memdb package would need its runtime
    dependencies inside pip's isolated build environment. errors.py must stay standalone."""
    spec = importlib.util.spec_from_file_location("memdb.errors", ROOT / "memdb" / "errors.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)  # not put in sys.modules: the build must not shadow memdb
    spec.loader.exec_module(module)
    return module


NativeBuildError: type[Exception] = _load_errors().NativeBuildError

_HINT = "install gcc / build-essential and python3-dev, or set MEMDB_PURE_PYTHON=1 to install the pure-Python scorer"

# Mirrors native/scorer.h, search.h, blocks.h and codec.h; cffi's parser takes no preprocessor includes.
CDEF = """
void memdb_score_batch(size_t n, const double *access_counts, const double *tag_weights,
                       const double *ages_days, const double *feedback,
                       const unsigned char *has_feedback, const double *params,
                       double *out_scores, double *out_components);
double memdb_score_one(double access_count, double tag_weight, double age_days, double feedback, const double *params);
size_t memdb_top_k(size_t n, const double *scores, size_t k, size_t *out_idx);

typedef struct {
    size_t n_terms;
    const unsigned char *const *blocks;
    const size_t *block_lens;
    const size_t *term_blocks;
    const double *idf;
    const unsigned char *roles;
    size_t n_chunks;
    const unsigned char *const *chunks;
    const size_t *chunk_lens;
    const unsigned char *const *levels;
    const size_t *level_lens;
    const int64_t *chunk_newest;
    const uint32_t *chunk_level;
} memdb_text_input;
int memdb_text_search(const memdb_text_input *in, const double *params, int64_t now_us, int has_lo,
                      int64_t lo_us, int has_hi, int64_t hi_us, int outcome, size_t keep, size_t *total, double *best,
                      size_t out_cap, size_t *n_out, uint32_t *out_doc, double *out_bm25,
                      uint32_t *out_tf, uint32_t *out_dl, int64_t *out_ts, uint32_t *out_suffix, uint32_t *out_code);
long memdb_decode_block(const unsigned char *block, size_t len, uint32_t *docs, uint32_t *tfs);
long memdb_stage_blocks(size_t n_docs, const uint32_t *doc, const uint32_t *dl, const size_t *pair_end,
                        const uint32_t *pair_term, const uint32_t *pair_tf, size_t n_terms, const unsigned char *tails,
                        const size_t *tail_end, unsigned char *out, size_t out_cap, size_t *out_end, uint32_t *out_term,
                        uint32_t *out_first, uint32_t *out_n, size_t block_cap, size_t *bad);
long memdb_entry_codes(const unsigned char *values, size_t n, const unsigned char *levels, size_t n_levels, uint32_t *codes);
long memdb_split_stored(const unsigned char *buf, size_t len, const unsigned char **blocks, size_t *lens, size_t cap);
void memdb_chunk_summary(const unsigned char *chunk, size_t len, const unsigned char *levels, size_t levels_len,
                         int64_t *newest, uint32_t *level, int64_t *oldest);
int memdb_lookup_tfs(const memdb_text_input *in, size_t n_docs, const uint32_t *docs, uint32_t *out_tf);
int memdb_count_outside(const memdb_text_input *in, const int64_t *chunk_oldest, int has_lo, int64_t lo_us, int has_hi,
                        int64_t hi_us, int outcome, size_t *n_before, int64_t *newest_before, size_t *n_after, size_t *bad);

long memdb_str_layout(const char *blob, const size_t *lens, size_t n);
"""


def _compile_args() -> dict[str, list[str]]:
    """Flags for GCC/Clang; MSVC has no libm and no -std=c99, so Windows takes the defaults."""
    if sys.platform == "win32":
        return {}
    # -ffp-contract=off: no fused multiply-add, so C rounds exactly like the pure-Python twin
    return {"extra_compile_args": ["-O2", "-std=c99", "-ffp-contract=off"], "libraries": ["m"]}


def missing_toolchain() -> str | None:
    """Say what is missing to compile a CPython extension here, or None if nothing is."""
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC")
    if cc and sys.platform != "win32":  # on Windows setuptools locates MSVC itself
        exe = shlex.split(cc)[0]
        if shutil.which(exe) is None:
            return f"memdb native scorer: C compiler not found: {exe!r} is not on PATH ({_HINT})"
    include = sysconfig.get_paths()["include"]
    if not (Path(include) / "Python.h").is_file():
        return f"memdb native scorer: Python headers not found: no Python.h in {include} ({_HINT})"
    return None


def preflight() -> None:
    """Fail the build with a message naming the missing tool, before the compiler is invoked."""
    problem = missing_toolchain()
    if problem is not None:
        raise NativeBuildError(problem)


ffibuilder = FFI()
ffibuilder.cdef(CDEF)
ffibuilder.set_source(
    "memdb._scorer",
    '#include "scorer.h"\n#include "search.h"\n#include "blocks.h"\n#include "codec.h"',
    sources=SOURCES,
    include_dirs=["native"],
    depends=HEADERS,
    **_compile_args(),
)

if __name__ in {"__cffi__", "__main__"}:  # "__cffi__" is how setuptools' cffi hook runs this file
    preflight()

if __name__ == "__main__":
    os.chdir(ROOT)  # cffi compiles relative to the current directory
    try:
        ffibuilder.compile(verbose=True)
    except VerificationError as exc:  # cffi's wrapper around CompileError / LinkError
        raise NativeBuildError(f"memdb native scorer: compilation failed: {exc} ({_HINT})") from exc
    finally:
        for stray in (
            "native/scorer.o",
            "native/search.o",
            "native/blocks.o",
            "native/codec.o",
            "memdb/_scorer.o",
        ):  # in-place builds leave objects behind
            Path(stray).unlink(missing_ok=True)
