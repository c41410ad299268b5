/* memdb capture's posting block writer: a transaction's postings grouped by term and encoded as
 * blocks in one call (DESIGN.md section 6b; the block format is in search.h).
 *
 * memdb/memory/postings.py holds the pure-Python twin (``py_stage_blocks``, over its
 * ``encode_block`` and ``_append``), reads the terms' last blocks from the store and writes
 * what this returns; tests/memory/test_postings_write.py compares the two, byte for byte.
 * native/build_scorer.py repeats this prototype in its cdef: change both together.
 */
#ifndef MEMDB_BLOCKS_H
#define MEMDB_BLOCKS_H

#include <stddef.h>
#include <stdint.h>

#define MEMDB_BLOCK_DOCS 128        /* documents a block holds (postings.BLOCK_DOCS) */
#define MEMDB_STAGE_NEW 0xFFFFFFFFu /* out_first of a term's last block rewritten */
#define MEMDB_BAD_INPUT (-5)        /* documents not ascending, or a term number out of range */

/* Documents i = 0 .. n_docs-1 (doc[i] ascending, dl[i] their lengths) hold the postings
 * pair_term/pair_tf [pair_end[i-1], pair_end[i]) (pair_end[-1] = 0): a term number below
 * n_terms and its tf (stored up to 65535). Term t's last block is tails[tail_end[t-1],
 * tail_end[t]) (tail_end[-1] = 0), or none when that is empty; it must have room (fewer than
 * MEMDB_BLOCK_DOCS documents) and end before the term's first document here.
 *
 * Writes the blocks that append each term's postings, term after term: its last block with as
 * many as it has room for, then new blocks of MEMDB_BLOCK_DOCS. Each is packed as msgpack bin
 * (as memdb's codec stores bytes), back to back in out; block j ends at out_end[j], is term
 * out_term[j]'s, starts at document index out_first[j] (MEMDB_STAGE_NEW: the last block,
 * rewritten under its key) and holds out_n[j] documents.
 *
 * Returns the number of blocks, MEMDB_MORE_ROOM (out_cap or block_cap too small: nothing
 * usable is written), MEMDB_BAD_BLOCK (a last block is damaged or full: *bad is its term),
 * MEMDB_BAD_INPUT or MEMDB_NO_MEMORY. out_cap = tail bytes + 8 bytes a posting + 21 a block,
 * and block_cap = 2 * n_terms + pairs / MEMDB_BLOCK_DOCS, always suffice. */
long memdb_stage_blocks(size_t n_docs, const uint32_t *doc, const uint32_t *dl, const size_t *pair_end,
                        const uint32_t *pair_term, const uint32_t *pair_tf, size_t n_terms, const unsigned char *tails,
                        const size_t *tail_end, unsigned char *out, size_t out_cap, size_t *out_end, uint32_t *out_term,
                        uint32_t *out_first, uint32_t *out_n, size_t block_cap, size_t *bad);

#endif
