/* memdb capture's posting block writer (C99). See blocks.h for the contract and search.h for
 * the block format; the pure-Python twin is memdb/memory/postings.py's ``py_stage_blocks``.
 */
#include "blocks.h"
#include "search.h"

#include <stdlib.h>
#include <string.h>

#define MAX_TF 0xFFFFu /* a tf is stored up to this (postings._MAX_TF) */

static uint32_t rd16(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }

static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void wr16(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

static void wr32(unsigned char *p, uint32_t v)
{
    wr16(p, v);
    wr16(p + 2, v >> 16);
}

static size_t varint_len(uint32_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static unsigned char *put_varint(unsigned char *p, uint32_t v)
{
    while (v >= 0x80) {
        *p++ = (unsigned char)((v & 0x7F) | 0x80);
        v >>= 7;
    }
    *p++ = (unsigned char)v;
    return p;
}

/* msgpack bin 8/16/32's header for n bytes (postings._pack_bin) */
static size_t bin_head_len(size_t n) { return n < 0x100 ? 2 : n < 0x10000 ? 3 : 5; }

static unsigned char *put_bin_head(unsigned char *p, size_t n)
{
    if (n < 0x100) {
        *p++ = 0xC4;
    } else if (n < 0x10000) {
        *p++ = 0xC5;
        *p++ = (unsigned char)(n >> 8);
    } else {
        *p++ = 0xC6;
        *p++ = (unsigned char)(n >> 24);
        *p++ = (unsigned char)(n >> 16);
        *p++ = (unsigned char)(n >> 8);
    }
    *p++ = (unsigned char)n;
    return p;
}

typedef struct {
    const uint32_t *doc, *dl;   /* the documents */
    const uint32_t *e_doc;      /* a term's postings: document indices, ascending */
    const uint32_t *e_tf;       /* and their tfs, clamped */
    unsigned char *out;
    size_t out_cap, at;         /* out's size and what is written */
    size_t *out_end;
    uint32_t *out_term, *out_first, *out_n;
    size_t block_cap, n_blocks;
} writer;

/* Write one block: head (MEMDB_BLOCK_HEADER bytes: n, max_tf, min_dl, first, last as stored
 * before, or all 0 for a new block) and body (a last block's postings, or nothing), then postings
 * [k, k + take) after document prev; first: the document index out_first records. */
static int put_block(writer *w, const unsigned char *old, size_t old_len, uint32_t n, uint32_t max_tf, uint32_t min_dl,
                     uint32_t first_doc, uint32_t prev, size_t k, size_t take, uint32_t term, uint32_t first)
{
    size_t body = old ? old_len : MEMDB_BLOCK_HEADER;
    uint32_t at_doc = prev;
    for (size_t j = k; j < k + take; j++) {
        uint32_t d = w->doc[w->e_doc[j]];
        body += varint_len(d - at_doc) + varint_len(w->e_tf[j]);
        at_doc = d;
    }
    size_t head = bin_head_len(body);
    if (w->n_blocks >= w->block_cap || head > w->out_cap - w->at || body > w->out_cap - w->at - head) {
        return MEMDB_MORE_ROOM;
    }
    unsigned char *p = put_bin_head(w->out + w->at, body);
    unsigned char *q = p + MEMDB_BLOCK_HEADER;
    if (old) {
        memcpy(p, old, old_len);
        q = p + old_len;
    }
    for (size_t j = k; j < k + take; j++) {
        uint32_t d = w->doc[w->e_doc[j]], tf = w->e_tf[j], dl = w->dl[w->e_doc[j]];
        q = put_varint(q, d - prev);
        q = put_varint(q, tf);
        if (tf > max_tf) {
            max_tf = tf;
        }
        if (dl < min_dl) {
            min_dl = dl;
        }
        prev = d;
    }
    wr16(p, n + (uint32_t)take);
    wr16(p + 2, max_tf);
    wr32(p + 4, min_dl);
    wr32(p + 8, first_doc);
    wr32(p + 12, prev);
    w->at = (size_t)(q - w->out);
    w->out_end[w->n_blocks] = w->at;
    w->out_term[w->n_blocks] = term;
    w->out_first[w->n_blocks] = first;
    w->out_n[w->n_blocks] = n + (uint32_t)take;
    w->n_blocks++;
    return MEMDB_OK;
}

long memdb_stage_blocks(size_t n_docs, const uint32_t *doc, const uint32_t *dl, const size_t *pair_end,
                        const uint32_t *pair_term, const uint32_t *pair_tf, size_t n_terms, const unsigned char *tails,
                        const size_t *tail_end, unsigned char *out, size_t out_cap, size_t *out_end, uint32_t *out_term,
                        uint32_t *out_first, uint32_t *out_n, size_t block_cap, size_t *bad)
{
    size_t n_pairs = n_docs ? pair_end[n_docs - 1] : 0;
    if (n_docs >= MEMDB_STAGE_NEW || n_terms >= MEMDB_STAGE_NEW) {
        return MEMDB_BAD_INPUT;
    }
    for (size_t i = 0; i < n_docs; i++) {
        if ((i && (pair_end[i] < pair_end[i - 1] || doc[i] < doc[i - 1]))) {
            return MEMDB_BAD_INPUT;
        }
    }
    for (size_t p = 0; p < n_pairs; p++) {
        if (pair_term[p] >= n_terms) {
            return MEMDB_BAD_INPUT;
        }
    }
    for (size_t t = 1; t < n_terms; t++) {
        if (tail_end[t] < tail_end[t - 1]) {
            return MEMDB_BAD_INPUT;
        }
    }
    /* group the postings by term, in document order (a counting sort): term t's are
     * [t ? start[t - 1] : 0, start[t]) once placed */
    size_t *start = calloc(n_terms + 1, sizeof *start);
    uint32_t *e_doc = malloc((n_pairs ? n_pairs : 1) * sizeof *e_doc);
    uint32_t *e_tf = malloc((n_pairs ? n_pairs : 1) * sizeof *e_tf);
    long rc = MEMDB_NO_MEMORY;
    if (!start || !e_doc || !e_tf) {
        goto done;
    }
    for (size_t p = 0; p < n_pairs; p++) {
        start[pair_term[p] + 1]++;
    }
    for (size_t t = 0; t < n_terms; t++) {
        start[t + 1] += start[t];
    }
    for (size_t i = 0, p = 0; i < n_docs; i++) {
        for (; p < pair_end[i]; p++) {
            size_t k = start[pair_term[p]]++;
            e_doc[k] = (uint32_t)i;
            e_tf[k] = pair_tf[p] > MAX_TF ? MAX_TF : pair_tf[p];
        }
    }
    writer w = {doc, dl, e_doc, e_tf, out, out_cap, 0, out_end, out_term, out_first, out_n, block_cap, 0};
    size_t lo = 0, tail_lo = 0;
    for (size_t t = 0; t < n_terms; t++) {
        size_t hi = start[t], k = lo;
        if (tail_end[t] > tail_lo && lo < hi) { /* its last block, filled first */
            const unsigned char *tb = tails + tail_lo;
            size_t len = tail_end[t] - tail_lo;
            if (len < MEMDB_BLOCK_HEADER || rd16(tb) >= MEMDB_BLOCK_DOCS || doc[e_doc[lo]] < rd32(tb + 12)) {
                *bad = t;
                rc = MEMDB_BAD_BLOCK;
                goto done;
            }
            uint32_t n = rd16(tb);
            size_t take = MEMDB_BLOCK_DOCS - n < hi - lo ? MEMDB_BLOCK_DOCS - n : hi - lo;
            rc = put_block(&w, tb, len, n, rd16(tb + 2), rd32(tb + 4), rd32(tb + 8), rd32(tb + 12), k, take, (uint32_t)t,
                           MEMDB_STAGE_NEW);
            if (rc != MEMDB_OK) {
                goto done;
            }
            k += take;
        }
        while (k < hi) {
            size_t take = hi - k < MEMDB_BLOCK_DOCS ? hi - k : MEMDB_BLOCK_DOCS;
            uint32_t first = doc[e_doc[k]];
            rc = put_block(&w, NULL, 0, 0, 0, UINT32_MAX, first, first, k, take, (uint32_t)t, e_doc[k]);
            if (rc != MEMDB_OK) {
                goto done;
            }
            k += take;
        }
        lo = hi;
        tail_lo = tail_end[t];
    }
    rc = (long)w.n_blocks;
done:
    free(start);
    free(e_doc);
    free(e_tf);
    return rc;
}
