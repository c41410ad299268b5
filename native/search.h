/* memdb text search kernel: block postings, BM25 with block-max pruning, exact totals,
 * top-k lower bounds (DESIGN.md section 6b).
 *
 * The formats (posting blocks, column records) are written and read in Python by
 * memdb/memory/postings.py (capture appends blocks in C too: blocks.h), which holds the
 * pure-Python twin of every function here;
 * keep the two in step (tests/memory/test_postings.py compares them, bit for bit).
 * native/build_scorer.py repeats these prototypes in its cdef: change both together.
 *
 * A posting block (little-endian): u16 n, u16 max_tf, u32 min_dl, u32 first, u32 last,
 * then n pairs of varints (gap, tf): the first gap is 0 (its document is `first`), each
 * later one the distance from the document before. Documents ascend within and across
 * blocks. max_tf and min_dl bound every posting of the block (BM25 grows with tf and
 * falls with dl), so a block's best possible BM25 is known without decoding it.
 *
 * A column record (20 bytes): i64 ts_us, u32 id suffix, u32 dl, u16 outcome, u8 live, u8 0.
 * A chunk holds the records of documents chunk*1024 .. chunk*1024+1023 in order; a chunk
 * may stop short after its last written record. Beside each chunk, a level chunk holds one
 * byte per record, in the same order: the document's relevance level (its index code is
 * level << 2 | outcome). Levels change as episodes are read, records seldom, so they are
 * stored apart and an access flush rewrites 1 KB a chunk instead of 20.
 */
#ifndef MEMDB_SEARCH_H
#define MEMDB_SEARCH_H

#include <stddef.h>
#include <stdint.h>

#define MEMDB_BLOCK_HEADER 16
#define MEMDB_RECORD_BYTES 20
#define MEMDB_CHUNK_DOCS 1024

/* Indices into the params array of memdb_text_search. */
enum {
    MEMDB_P_AVGDL = 0,
    MEMDB_P_K1 = 1,
    MEMDB_P_B = 2,
    MEMDB_P_WEEK_US = 3,        /* recency halves every this many microseconds */
    MEMDB_P_TEXT_LEVEL = 4,     /* what one relevance level adds to a lower bound */
    MEMDB_P_TEXT_WEIGHT = 5,    /* 0.9: the weight of bm25 / best bm25 */
    MEMDB_P_RECENCY_WEIGHT = 6, /* 0.05 */
    MEMDB_P_SLACK = 7,          /* 1e-9 */
    MEMDB_P_MAX_LEVEL = 8,      /* 250: the highest relevance level */
    MEMDB_P_BOOST = 9,          /* what a document in a BOOST list adds to its score (0.1) */
    MEMDB_P_TF_UNIT = 10,       /* what one occurrence adds to a stored tf (3): BM25 reads tf / unit */
    MEMDB_P_NORM = 11,          /* > 0: the best BM25 to normalise by instead of the search's own (0: its own) */
    MEMDB_N_SEARCH_PARAMS = 12
};

/* The outcome filter that passes every document with an outcome (code & 3 != 0): attempts, not talk. */
#define MEMDB_ANY_OUTCOME 4

/* Return codes. */
#define MEMDB_OK 0
#define MEMDB_MORE_ROOM (-1)   /* out_cap too small: *n_out holds the room needed */
#define MEMDB_BAD_BLOCK (-2)   /* a block is damaged: *n_out holds the index of the block */
#define MEMDB_BAD_COLUMN (-3)  /* a posting's document has no live column record: *n_out holds it */
#define MEMDB_NO_MEMORY (-4)

/* What each list of a search is (memdb_text_input.roles). */
enum {
    MEMDB_MATCH = 0,   /* a query word: its documents match, its tf is scored */
    MEMDB_RANK = 1,    /* a word that only ranks: scored where a document matches otherwise */
    MEMDB_BOOST = 2,   /* a boost tag's documents: they match, and score MEMDB_P_BOOST more */
    MEMDB_REQUIRE = 3  /* a required tag's documents: a match must be in every such list */
};

typedef struct {
    size_t n_terms;
    const unsigned char *const *blocks; /* every term's blocks, term after term */
    const size_t *block_lens;
    const size_t *term_blocks;          /* how many blocks each term has */
    const double *idf;                  /* per term */
    const unsigned char *roles;         /* per list (NULL: every list is MEMDB_MATCH) */
    size_t n_chunks;                    /* chunk table, indexed by chunk number (len 0: none) */
    const unsigned char *const *chunks;
    const size_t *chunk_lens;
    const unsigned char *const *levels; /* per chunk: its level chunk (one byte per record) */
    const size_t *level_lens;
    /* per chunk (memdb_chunk_summary; NULL: not known, every chunk is assumed as new as now and
     * as relevant as MEMDB_P_MAX_LEVEL): the newest ts_us and the highest level among its records */
    const int64_t *chunk_newest;
    const uint32_t *chunk_level;
} memdb_text_input;

/* Search the union of the terms' postings (now_us: the time recency is measured from).
 *
 * Filters: a document passes when lo_us <= ts < hi_us (has_lo / has_hi say whether each
 * bound applies) and, when outcome >= 0, its record's outcome == outcome (MEMDB_ANY_OUTCOME: any
 * outcome but none). *total is the number of passing documents and *best the highest BM25 among
 * them (0 when none). Lower bounds divide BM25 by params[MEMDB_P_NORM] when it is > 0 (a best
 * over matches the search does not see: the caller's filtered subset, or archived ones), else by
 * *best (1 when that is 0).
 *
 * keep > 0 ("top" mode): out_doc/out_bm25/out_tf receive, in document order, the passing
 * documents whose lower bound 0.9*bm25/best + text_level*level + 0.05*recency is within
 * text_level (plus slack) of the keep-th best lower bound; a document whose bound (0.9 *
 * block_bm25 / best, plus its chunk's highest level and newest recency) cannot reach the cut is
 * counted but never scored. Documents are visited newest chunk first, so the cut rises fast;
 * what is returned does not depend on that order (a skipped document's bound is below the final
 * cut, and every document at or above it is scored whatever the order).
 * keep == 0 ("all" mode): every passing document.
 * A RANK list with more postings than all the other lists but RANK ones together is looked up, not
 * merged: its headers are checked, and a block is decoded (so found damaged) only when a document
 * in its range is scored. Everything else is decoded and checked up front.
 * out_tf has n_terms entries per document (0 for an absent term); out_dl its length; out_ts,
 * out_suffix and out_code its column record's time, id suffix and index code (level << 2 | outcome),
 * what the query layer makes each match's index tail and bound of.
 */
int memdb_text_search(const memdb_text_input *in, const double *params, int64_t now_us, int has_lo,
                      int64_t lo_us, int has_hi, int64_t hi_us, int outcome, size_t keep, size_t *total, double *best,
                      size_t out_cap, size_t *n_out, uint32_t *out_doc, double *out_bm25,
                      uint32_t *out_tf, uint32_t *out_dl, int64_t *out_ts, uint32_t *out_suffix, uint32_t *out_code);

/* The newest ts_us among a chunk's live records (0 when it has none), the highest of its levels
 * (0 when none; a zeroed record's level is 0), and the oldest ts_us among its live records
 * (INT64_MAX when it has none, so oldest > newest says "no live record"), for
 * memdb_text_input.chunk_newest / chunk_level and memdb_count_outside's chunk_oldest. Either
 * buffer may be NULL with length 0. */
void memdb_chunk_summary(const unsigned char *chunk, size_t len, const unsigned char *levels, size_t levels_len,
                         int64_t *newest, uint32_t *level, int64_t *oldest);

/* What the lists match outside a window, counted in one pass: the documents in a MATCH or BOOST
 * list and in every REQUIRE list (RANK lists are not read) whose record passes outcome (as in
 * memdb_text_search), *n_before of them before lo_us (when has_lo) with *newest_before the newest
 * time among them (0 when none), and *n_after at or after hi_us (when has_hi). The query layer's
 * note of an empty window: how many matches lie before and after it, exactly, whatever the
 * number.
 * With chunk summaries (in->chunk_newest and chunk_oldest, both per chunk, from
 * memdb_chunk_summary; NULL: every block is decoded and every match looked up), a chunk whose live
 * records all fall on one side of each bound decides its matches' side without their records:
 * with one list, no REQUIRE list and no outcome, a block whose documents' chunks all do is counted
 * from its header, undecoded (only blocks searched for *newest_before are decoded); otherwise the
 * matches in such chunks are counted without a record lookup when no outcome is asked. Such a
 * block's postings and such documents' records are not verified here (memdb check verifies them).
 * Returns MEMDB_OK, MEMDB_BAD_BLOCK (*bad: the block's index), MEMDB_BAD_COLUMN (*bad: the
 * document) or MEMDB_NO_MEMORY. */
int memdb_count_outside(const memdb_text_input *in, const int64_t *chunk_oldest, int has_lo, int64_t lo_us, int has_hi,
                        int64_t hi_us, int outcome, size_t *n_before, int64_t *newest_before, size_t *n_after, size_t *bad);

/* The frequency of each term in each of docs (ascending): out_tf[i * n_terms + t], 0 when
 * absent. Only blocks whose range holds an asked document are decoded. Returns MEMDB_OK or
 * MEMDB_BAD_BLOCK. Chunks are not read. */
int memdb_lookup_tfs(const memdb_text_input *in, size_t n_docs, const uint32_t *docs, uint32_t *out_tf);

/* Split a list's values as stored, back to back (each block packed as msgpack bin, as memdb's
 * codec stores bytes: 0xC4 u8 length, 0xC5 u16 or 0xC6 u32 big-endian length, then the block),
 * into blocks/lens (room for cap); return how many, or -1 when damaged or more than cap. Lets the
 * caller hand a whole list over without one object per block. */
long memdb_split_stored(const unsigned char *buf, size_t len, const unsigned char **blocks, size_t *lens, size_t cap);

/* The index codes of n time-ordered index entries whose values lie back to back in values, each
 * as memdb writes them (memdb.memory.layout.entry_value: 0xCE, then doc << 2 | outcome as a
 * big-endian u32): codes[i] = levels[doc] << 2 | outcome, with levels the owner's relevance levels
 * laid end to end, one byte a document. Returns -1, or the position of the first entry that is
 * damaged or names a document past n_levels (codes before it are set). */
long memdb_entry_codes(const unsigned char *values, size_t n, const unsigned char *levels, size_t n_levels, uint32_t *codes);

/* Decode one block into docs/tfs (room for 65535 each); return n, or -1 if it is damaged. */
long memdb_decode_block(const unsigned char *block, size_t len, uint32_t *docs, uint32_t *tfs);

#endif /* MEMDB_SEARCH_H */
