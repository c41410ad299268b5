/* memdb text search kernel (C99). See search.h for the formats and the contract.
 *
 * Every floating-point expression below is evaluated in the order the pure-Python twin
 * (memdb/memory/postings.py) evaluates it, and the build disables FMA contraction, so both
 * give the same doubles; pruning decisions therefore agree too.
 */
#include "search.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint32_t rd16(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }

static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* as two 32-bit reads, which compilers make one load (a loop over the eight bytes took a third of
 * memdb_count_outside's time) */
static int64_t rd64(const unsigned char *p) { return (int64_t)((uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32); }

/* A varint (7 bits a byte, low first, at most 5 bytes); 0 past the end or when too long. */
static int varint(const unsigned char **p, const unsigned char *end, uint32_t *out)
{
    uint64_t v = 0;
    int shift = 0;
    while (*p < end && shift <= 28) {
        unsigned char c = *(*p)++;
        v |= (uint64_t)(c & 0x7F) << shift;
        if (!(c & 0x80)) {
            if (v > 0xFFFFFFFFu) {
                return 0;
            }
            *out = (uint32_t)v;
            return 1;
        }
        shift += 7;
    }
    return 0;
}

long memdb_decode_block(const unsigned char *block, size_t len, uint32_t *docs, uint32_t *tfs)
{
    const unsigned char *p, *end;
    uint32_t n, max_tf, first, last, doc = 0, gap, tf, i;
    if (len < MEMDB_BLOCK_HEADER) {
        return -1;
    }
    n = rd16(block);
    max_tf = rd16(block + 2);
    first = rd32(block + 8);
    last = rd32(block + 12);
    if (n == 0) {
        return -1;
    }
    p = block + MEMDB_BLOCK_HEADER;
    end = block + len;
    for (i = 0; i < n; i++) {
        if (!varint(&p, end, &gap) || !varint(&p, end, &tf) || tf == 0 || tf > max_tf) {
            return -1;
        }
        if (i == 0) {
            if (gap != 0) {
                return -1;
            }
            doc = first;
        } else {
            if (gap == 0 || doc > 0xFFFFFFFFu - gap) {
                return -1;
            }
            doc += gap;
        }
        docs[i] = doc;
        tfs[i] = tf;
    }
    if (p != end || doc != last) {
        return -1;
    }
    return (long)n;
}

long memdb_split_stored(const unsigned char *buf, size_t len, const unsigned char **blocks, size_t *lens, size_t cap)
{
    size_t pos = 0, n = 0;
    while (pos < len) {
        size_t head, size;
        if (buf[pos] == 0xC4 && len - pos >= 2) {
            head = 2;
            size = buf[pos + 1];
        } else if (buf[pos] == 0xC5 && len - pos >= 3) {
            head = 3;
            size = (size_t)buf[pos + 1] << 8 | buf[pos + 2];
        } else if (buf[pos] == 0xC6 && len - pos >= 5) {
            head = 5;
            size = (size_t)buf[pos + 1] << 24 | (size_t)buf[pos + 2] << 16 | (size_t)buf[pos + 3] << 8 | buf[pos + 4];
        } else {
            return -1;
        }
        if (size > len - pos - head || n == cap) {
            return -1;
        }
        blocks[n] = buf + pos + head;
        lens[n] = size;
        n++;
        pos += head + size;
    }
    return (long)n;
}

/* The column record of doc, or NULL when it has none, it is not live or it has no level. */
static const unsigned char *record_of(const memdb_text_input *in, uint32_t doc)
{
    size_t chunk = doc / MEMDB_CHUNK_DOCS;
    size_t i = doc % MEMDB_CHUNK_DOCS;
    size_t off = i * MEMDB_RECORD_BYTES;
    const unsigned char *rec;
    if (chunk >= in->n_chunks || in->chunk_lens[chunk] < off + MEMDB_RECORD_BYTES || in->levels == NULL || in->levels[chunk] == NULL ||
        in->level_lens[chunk] <= i) {
        return NULL;
    }
    rec = in->chunks[chunk] + off;
    return rec[18] == 1 ? rec : NULL;
}

/* The level of doc, whose record record_of found. */
static uint32_t level_byte(const memdb_text_input *in, uint32_t doc)
{
    return in->levels[doc / MEMDB_CHUNK_DOCS][doc % MEMDB_CHUNK_DOCS];
}

static double level_of(const memdb_text_input *in, uint32_t doc)
{
    return (double)level_byte(in, doc);
}

void memdb_chunk_summary(const unsigned char *chunk, size_t len, const unsigned char *levels, size_t levels_len,
                         int64_t *newest, uint32_t *level, int64_t *oldest)
{
    size_t off, i;
    int any = 0;
    *newest = 0;
    *level = 0;
    *oldest = INT64_MAX;
    for (off = 0; off + MEMDB_RECORD_BYTES <= len; off += MEMDB_RECORD_BYTES) {
        const unsigned char *rec = chunk + off;
        int64_t ts;
        if (rec[18] != 1) {
            continue;
        }
        ts = rd64(rec);
        if (!any || ts > *newest) {
            *newest = ts;
        }
        if (ts < *oldest) {
            *oldest = ts;
        }
        any = 1;
    }
    for (i = 0; i < levels_len; i++) {
        if (levels[i] > *level) {
            *level = levels[i];
        }
    }
}

/* BM25's constants; a stored tf (and length) counts in units of an occurrence (TF_UNIT in
 * memdb/memory/postings.py, passed as MEMDB_P_TF_UNIT). */
typedef struct {
    double avgdl, k1, b, unit;
} bm25_consts;

/* One term's Okapi BM25 from a stored tf: as _bm25 in postings.py, operation for operation. */
static double bm25_part(double idf, double tf, double dl, const bm25_consts *c)
{
    tf = tf / c->unit;
    return idf * tf * (c->k1 + 1) / (tf + c->k1 * (1 - c->b + c->b * dl / c->avgdl));
}

typedef struct {
    size_t n;         /* postings decoded (a merged list: all of them) */
    uint32_t *docs;
    uint32_t *tfs;
    size_t nb, bi0;   /* its blocks, and the index of its first in in->blocks */
    double *b_bound;  /* each block's bound (0 for a tag list: tag lists are not scored) */
    size_t *b_off;    /* where each block's postings start in docs/tfs (nb + 1 entries) */
    size_t cur;       /* pass 1's block cursor */
    /* a looked-up list (a RANK list longer than the matching lists): its blocks are found by
     * their headers and decoded only when a document that may be in one is scored */
    int lazy;
    uint32_t *b_first, *b_last;
    unsigned char *b_done;
} term_postings;

#define NO_BLOCK 0xFFFFFFFFu
/* At most this many (document, list) frequencies are kept from pass 1 (1 MB): past it, a
 * document's frequencies are looked up in its lists again (tf_of) when it is scored. */
#define TF_ROWS_MAX ((size_t)1 << 18)
#define NO_SLOT 0xFFFFFFFFu

/* min-heap of doubles */
static void heap_push(double *h, size_t *n, double v)
{
    size_t i = (*n)++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (h[parent] <= v) {
            break;
        }
        h[i] = h[parent];
        i = parent;
    }
    h[i] = v;
}

static void heap_replace_min(double *h, size_t n, double v)
{
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        double mv = v;
        if (l < n && h[l] < mv) {
            m = l;
            mv = h[l];
        }
        if (r < n && h[r] < mv) {
            m = r;
        }
        if (m == i) {
            break;
        }
        h[i] = h[m];
        i = m;
    }
    h[i] = v;
}

/* The first index in [lo, hi) of ascending a whose value is not below x (hi when none is). */
static size_t lower_bound(const uint32_t *a, size_t lo, size_t hi, uint32_t x)
{
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid] < x) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

/* The block of a looked-up list whose range holds doc (the first whose last document is not
 * below it), or NO_BLOCK. */
static uint32_t lazy_block(const term_postings *tp, uint32_t doc)
{
    size_t j = lower_bound(tp->b_last, 0, tp->nb, doc);
    return (j < tp->nb && tp->b_first[j] <= doc) ? (uint32_t)j : NO_BLOCK;
}

/* The tf of doc in a list (0 when absent), decoding a looked-up list's block the first time;
 * -1 when that block is damaged (*bad: its index in in->blocks). */
static long tf_of(const memdb_text_input *in, term_postings *tp, uint32_t doc, size_t *bad)
{
    size_t lo = 0, hi = tp->n, at;
    if (tp->lazy) {
        uint32_t j = lazy_block(tp, doc);
        if (j == NO_BLOCK) {
            return 0;
        }
        if (!tp->b_done[j]) {
            size_t off = tp->b_off[j];
            if (memdb_decode_block(in->blocks[tp->bi0 + j], in->block_lens[tp->bi0 + j], tp->docs + off, tp->tfs + off) < 0) {
                *bad = tp->bi0 + j;
                return -1;
            }
            tp->b_done[j] = 1;
        }
        lo = tp->b_off[j];
        hi = tp->b_off[j + 1];
    }
    at = lower_bound(tp->docs, lo, hi, doc);
    return (at < hi && tp->docs[at] == doc) ? (long)tp->tfs[at] : 0;
}

/* The tf of doc in list t: from the document's row of merged frequencies when pass 1 kept one
 * (row != NULL, a merged list), else by tf_of. */
static long row_tf(const memdb_text_input *in, term_postings *tp, size_t t, uint32_t doc, const uint32_t *row, size_t *bad)
{
    return (row != NULL && !tp[t].lazy) ? (long)row[t] : tf_of(in, &tp[t], doc, bad);
}

/* A document's BM25 over the lists that are scored (MATCH and RANK), in list order, as the
 * twin sums it; -1 when a looked-up block is damaged. */
static int exact_bm25(const memdb_text_input *in, term_postings *tp, uint32_t doc, const uint32_t *row, double dl,
                      const bm25_consts *bk, double *out, size_t *bad)
{
    double s = 0.0;
    size_t t;
    for (t = 0; t < in->n_terms; t++) {
        if (!(in->roles && in->roles[t] > MEMDB_RANK)) {
            long tf = row_tf(in, tp, t, doc, row, bad);
            if (tf < 0) {
                return -1;
            }
            if (tf) {
                s += bm25_part(in->idf[t], (double)tf, dl, bk);
            }
        }
    }
    *out = s;
    return 0;
}

/* A bound on a document's BM25 without decoding a looked-up list: its merged lists' exact parts
 * and the looked-up lists' block bounds, in list order, raised by 1e-12 against rounding. */
static double bm25_bound(const memdb_text_input *in, term_postings *tp, uint32_t doc, const uint32_t *row, double dl,
                         const bm25_consts *bk)
{
    double s = 0.0;
    size_t t, bad;
    for (t = 0; t < in->n_terms; t++) {
        if (in->roles && in->roles[t] > MEMDB_RANK) {
            continue;
        }
        if (tp[t].lazy) {
            uint32_t j = lazy_block(&tp[t], doc);
            if (j != NO_BLOCK) {
                s += tp[t].b_bound[j];
            }
        } else {
            long tf = row_tf(in, tp, t, doc, row, &bad); /* a merged list: never fails */
            if (tf > 0) {
                s += bm25_part(in->idf[t], (double)tf, dl, bk);
            }
        }
    }
    return s * (1 + 1e-12);
}

/* Whether a record of outcome ``got`` (its code & 3) passes the filter ``outcome`` (>= 0). */
static int outcome_passes(int outcome, int got)
{
    return outcome == MEMDB_ANY_OUTCOME ? got != 0 : got == outcome;
}

int memdb_text_search(const memdb_text_input *in, const double *params, int64_t now_us, int has_lo,
                      int64_t lo_us, int has_hi, int64_t hi_us, int outcome, size_t keep, size_t *total, double *best,
                      size_t out_cap, size_t *n_out, uint32_t *out_doc, double *out_bm25,
                      uint32_t *out_tf, uint32_t *out_dl, int64_t *out_ts, uint32_t *out_suffix, uint32_t *out_code)
{
    const bm25_consts bk = {params[MEMDB_P_AVGDL], params[MEMDB_P_K1], params[MEMDB_P_B], params[MEMDB_P_TF_UNIT]};
    const double week = params[MEMDB_P_WEEK_US], tl = params[MEMDB_P_TEXT_LEVEL];
    const double tw = params[MEMDB_P_TEXT_WEIGHT], rw = params[MEMDB_P_RECENCY_WEIGHT];
    const double slack = params[MEMDB_P_SLACK], max_level = params[MEMDB_P_MAX_LEVEL], boost = params[MEMDB_P_BOOST];
    const size_t nt = in->n_terms;
    size_t n_require = 0, n_lazy = 0, merged = 0;
    const int filtered = has_lo || has_hi || outcome >= 0;
    term_postings *tp = NULL;
    size_t *pos = NULL, n_union = 0, cap_union = 0, t, i, bi = 0, room = 0, bad = 0;
    uint32_t *u_doc = NULL, *u_slot = NULL; /* per document of the union: its number, its slot once scored */
    double *u_ub = NULL, *heap = NULL;
    unsigned char *u_state = NULL; /* 0 unscored, 1 scored, 2 scored and a candidate */
    unsigned char *u_boost = NULL;
    uint32_t *u_tf = NULL; /* per document of the union: each merged list's tf (nt a row), when kept */
    double *s_bm = NULL, *s_low = NULL; /* per slot (a scored document): BM25 and lower bound */
    size_t n_slots = 0, cap_slots = 0;
    double *c_extra = NULL;        /* per chunk: what its level and recency can add at most */
    unsigned char *c_known = NULL; /* whether c_extra holds it yet */
    double top = 0.0;
    int rc = MEMDB_OK;

    *total = 0;
    *best = 0.0;
    *n_out = 0;
    tp = calloc(nt ? nt : 1, sizeof *tp);
    pos = calloc(nt ? nt : 1, sizeof *pos);
    if (!tp || !pos) {
        rc = MEMDB_NO_MEMORY;
        goto done;
    }
    /* every list's postings, from its headers */
    for (t = 0; t < nt; t++) {
        size_t nb = in->term_blocks[t], j;
        for (j = 0; j < nb; j++, bi++) {
            if (in->block_lens[bi] < MEMDB_BLOCK_HEADER) {
                *n_out = bi;
                rc = MEMDB_BAD_BLOCK;
                goto done;
            }
            pos[t] += rd16(in->blocks[bi]);
        }
        if (!(in->roles && in->roles[t] == MEMDB_RANK)) {
            merged += pos[t];
        }
    }
    /* A RANK list longer than all the lists that match together is looked up, not merged: only
     * the documents scored need its frequencies. */
    for (t = 0; t < nt; t++) {
        int role = in->roles ? in->roles[t] : MEMDB_MATCH;
        n_require += role == MEMDB_REQUIRE;
        tp[t].lazy = role == MEMDB_RANK && pos[t] > merged;
        n_lazy += (size_t)tp[t].lazy;
    }
    /* decode every block of every merged list; a looked-up list's headers only */
    bi = 0;
    for (t = 0; t < nt; t++) {
        size_t nb = in->term_blocks[t], room_t = pos[t], j;
        const int scored = !(in->roles && in->roles[t] > MEMDB_RANK);
        pos[t] = 0;
        tp[t].nb = nb;
        tp[t].bi0 = bi;
        tp[t].docs = malloc((room_t ? room_t : 1) * sizeof(uint32_t));
        tp[t].tfs = malloc((room_t ? room_t : 1) * sizeof(uint32_t));
        tp[t].b_bound = malloc((nb ? nb : 1) * sizeof(double));
        tp[t].b_off = malloc((nb + 1) * sizeof(size_t));
        if (!tp[t].docs || !tp[t].tfs || !tp[t].b_bound || !tp[t].b_off) {
            rc = MEMDB_NO_MEMORY;
            goto done;
        }
        tp[t].b_off[0] = 0;
        if (tp[t].lazy) {
            tp[t].b_first = malloc((nb ? nb : 1) * sizeof(uint32_t));
            tp[t].b_last = malloc((nb ? nb : 1) * sizeof(uint32_t));
            tp[t].b_done = calloc(nb ? nb : 1, 1);
            if (!tp[t].b_first || !tp[t].b_last || !tp[t].b_done) {
                rc = MEMDB_NO_MEMORY;
                goto done;
            }
            for (j = 0; j < nb; j++, bi++) {
                const unsigned char *blk = in->blocks[bi];
                uint32_t n = rd16(blk), first = rd32(blk + 8), last = rd32(blk + 12);
                if (n == 0 || first > last || (j > 0 && first <= tp[t].b_last[j - 1])) {
                    *n_out = bi;
                    rc = MEMDB_BAD_BLOCK;
                    goto done;
                }
                tp[t].b_first[j] = first;
                tp[t].b_last[j] = last;
                tp[t].b_bound[j] = bm25_part(in->idf[t], (double)rd16(blk + 2), (double)rd32(blk + 4), &bk);
                tp[t].b_off[j + 1] = tp[t].b_off[j] + n;
            }
            continue;
        }
        for (j = 0; j < nb; j++, bi++) {
            const unsigned char *blk = in->blocks[bi];
            long got = memdb_decode_block(blk, in->block_lens[bi], tp[t].docs + tp[t].n, tp[t].tfs + tp[t].n);
            if (got < 0 || (tp[t].n > 0 && tp[t].docs[tp[t].n] <= tp[t].docs[tp[t].n - 1])) {
                *n_out = bi;
                rc = MEMDB_BAD_BLOCK;
                goto done;
            }
            tp[t].b_bound[j] = scored ? bm25_part(in->idf[t], (double)rd16(blk + 2), (double)rd32(blk + 4), &bk) : 0.0;
            tp[t].n += (size_t)got;
            tp[t].b_off[j + 1] = tp[t].n;
        }
        cap_union += tp[t].n;
    }
    u_doc = malloc((cap_union ? cap_union : 1) * sizeof(uint32_t));
    u_slot = malloc((cap_union ? cap_union : 1) * sizeof(uint32_t));
    u_ub = malloc((cap_union ? cap_union : 1) * sizeof(double));
    u_state = calloc(cap_union ? cap_union : 1, 1);
    u_boost = malloc(cap_union ? cap_union : 1);
    /* a top k beyond the union keeps every candidate, as keep == cap_union does; clamping it here
     * keeps the heap's size from overflowing (recall(limit=2**62) corrupted the heap) */
    if (keep > cap_union) {
        keep = cap_union ? cap_union : 1;
    }
    heap = malloc((keep ? keep : 1) * sizeof(double));
    c_extra = malloc((in->n_chunks ? in->n_chunks : 1) * sizeof(double));
    c_known = calloc(in->n_chunks ? in->n_chunks : 1, 1);
    /* pass 1 meets every merged posting of a document: it keeps their tfs, so scoring it needs
     * no search of its lists (the same sums, in the same order) */
    if (nt > 0 && cap_union <= TF_ROWS_MAX / nt) {
        u_tf = malloc((cap_union ? cap_union : 1) * nt * sizeof(uint32_t));
        if (!u_tf) {
            rc = MEMDB_NO_MEMORY;
            goto done;
        }
    }
    if (!u_doc || !u_slot || !u_ub || !u_state || !u_boost || !heap || !c_extra || !c_known) {
        rc = MEMDB_NO_MEMORY;
        goto done;
    }
    /* pass 1: the union of the merged lists in document order, filtered; block bounds summed in
     * term order (a looked-up list's where the document falls in one of its blocks' ranges) */
    for (;;) {
        uint32_t doc = 0, *row;
        int any = 0, matched = 0, boosted = 0;
        size_t required = 0;
        double ub = 0.0;
        for (t = 0; t < nt; t++) {
            if (pos[t] < tp[t].n && (!any || tp[t].docs[pos[t]] < doc)) {
                doc = tp[t].docs[pos[t]];
                any = 1;
            }
        }
        if (!any) {
            break;
        }
        row = u_tf ? u_tf + n_union * nt : NULL; /* this document's, if it joins the union */
        if (row) {
            memset(row, 0, nt * sizeof *row);
        }
        for (t = 0; t < nt; t++) {
            term_postings *l = &tp[t];
            if (l->lazy) {
                size_t c = l->cur;
                while (c < l->nb && l->b_last[c] < doc) {
                    c++;
                }
                l->cur = c;
                if (c < l->nb && l->b_first[c] <= doc) {
                    ub += l->b_bound[c];
                }
                continue;
            }
            if (pos[t] < l->n && l->docs[pos[t]] == doc) {
                int role = in->roles ? in->roles[t] : MEMDB_MATCH;
                while (pos[t] >= l->b_off[l->cur + 1]) {
                    l->cur++;
                }
                ub += l->b_bound[l->cur];
                if (row) {
                    row[t] = l->tfs[pos[t]];
                }
                pos[t]++;
                matched |= role == MEMDB_MATCH || role == MEMDB_BOOST;
                boosted |= role == MEMDB_BOOST;
                required += role == MEMDB_REQUIRE;
            }
        }
        if (!matched || required < n_require) {
            continue;
        }
        if (filtered) {
            const unsigned char *rec = record_of(in, doc);
            int64_t ts;
            if (rec == NULL) {
                *n_out = doc;
                rc = MEMDB_BAD_COLUMN;
                goto done;
            }
            ts = rd64(rec);
            if ((has_lo && ts < lo_us) || (has_hi && ts >= hi_us) || (outcome >= 0 && !outcome_passes(outcome, (int)(rd16(rec + 16) & 3)))) {
                continue;
            }
        }
        u_doc[n_union] = doc;
        u_ub[n_union] = ub * (1 + 1e-12); /* rounding never lets a bound fall below its score */
        u_boost[n_union] = (unsigned char)boosted;
        u_slot[n_union] = NO_SLOT;
        n_union++;
    }
    *total = n_union;
    /* pass 2: the best BM25, scoring only documents whose bound beats the best so far; pass 3:
     * lower bounds. A document is scored once: its record read, its frequencies taken from its
     * row (or looked up, past TF_ROWS_MAX). */
#define ROW(i) (u_tf ? u_tf + (size_t)(i) * nt : NULL)
#define RECORD(i, rec)                                                                                  \
    do {                                                                                                \
        if (((rec) = record_of(in, u_doc[i])) == NULL) {                                                \
            *n_out = u_doc[i];                                                                          \
            rc = MEMDB_BAD_COLUMN;                                                                      \
            goto done;                                                                                  \
        }                                                                                               \
    } while (0)
#define SCORE(i, rec)                                                                                   \
    do {                                                                                                \
        double bm_;                                                                                     \
        if (exact_bm25(in, tp, u_doc[i], ROW(i), (double)rd32((rec) + 12), &bk, &bm_, &bad) < 0) { \
            *n_out = bad;                                                                               \
            rc = MEMDB_BAD_BLOCK;                                                                       \
            goto done;                                                                                  \
        }                                                                                               \
        if (n_slots == cap_slots) {                                                                     \
            size_t grown = cap_slots ? 2 * cap_slots : 1024;                                            \
            double *bm_grown = realloc(s_bm, grown * sizeof(double));                                   \
            double *low_grown = bm_grown ? realloc(s_low, grown * sizeof(double)) : NULL;               \
            if (bm_grown) {                                                                             \
                s_bm = bm_grown;                                                                        \
            }                                                                                           \
            if (!bm_grown || !low_grown) {                                                              \
                rc = MEMDB_NO_MEMORY;                                                                   \
                goto done;                                                                              \
            }                                                                                           \
            s_low = low_grown;                                                                          \
            cap_slots = grown;                                                                          \
        }                                                                                               \
        u_slot[i] = (uint32_t)n_slots;                                                                  \
        s_bm[n_slots] = bm_;                                                                            \
        s_low[n_slots] = 0.0;                                                                           \
        n_slots++;                                                                                      \
    } while (0)
    for (i = 0; i < n_union; i++) {
        const unsigned char *rec;
        double bm;
        if (i > 0 && u_ub[i] <= top) {
            continue;
        }
        RECORD(i, rec);
        /* a tighter bound first: a looked-up list's block is decoded only if needed */
        if (i > 0 && n_lazy && bm25_bound(in, tp, u_doc[i], ROW(i), (double)rd32(rec + 12), &bk) <= top) {
            continue;
        }
        SCORE(i, rec);
        u_state[i] = 1;
        bm = s_bm[u_slot[i]];
        if (i == 0 || bm > top) {
            top = bm;
        }
    }
    *best = top;
    {
        const double norm = params[MEMDB_P_NORM] > 0.0 ? params[MEMDB_P_NORM] : top > 0.0 ? top : 1.0;
        const double any_extra = tl * max_level + rw; /* a chunk without a summary: any level, now */
        const int summarised = in->chunk_newest != NULL && in->chunk_level != NULL;
        size_t heap_n = 0;
        double cut = -INFINITY;
        /* pass 3: lower bounds, skipping documents whose bound cannot reach the cut; newest
         * documents first (they have the best recency), so the heap fills with good ones early */
        for (i = n_union; i-- > 0;) {
            const unsigned char *rec;
            double low;
            if (keep > 0 && heap_n == keep) {
                size_t c = u_doc[i] / MEMDB_CHUNK_DOCS;
                double extra = any_extra;
                if (summarised && c < in->n_chunks) {
                    if (!c_known[c]) {
                        int64_t age = now_us - in->chunk_newest[c];
                        c_extra[c] = tl * (double)in->chunk_level[c] + rw * pow(0.5, (double)(age > 0 ? age : 0) / week);
                        c_known[c] = 1;
                    }
                    extra = c_extra[c];
                }
                if (tw * u_ub[i] / norm + extra + (u_boost[i] ? boost : 0.0) + slack < cut) {
                    continue;
                }
            }
            RECORD(i, rec);
            if (u_state[i] == 0) {
                if (keep > 0 && heap_n == keep && n_lazy) {
                    /* the document's own level and recency, and its merged lists' exact parts,
                     * before a looked-up list's block is decoded */
                    int64_t age = now_us - rd64(rec);
                    if (tw * bm25_bound(in, tp, u_doc[i], ROW(i), (double)rd32(rec + 12), &bk) / norm +
                            tl * level_of(in, u_doc[i]) + rw * pow(0.5, (double)(age > 0 ? age : 0) / week) +
                            (u_boost[i] ? boost : 0.0) + slack <
                        cut) {
                        continue;
                    }
                }
                SCORE(i, rec);
            }
            u_state[i] = 2;
            if (keep == 0) {
                continue;
            }
            {
                int64_t age = now_us - rd64(rec);
                low = tw * s_bm[u_slot[i]] / norm + tl * level_of(in, u_doc[i]) + rw * pow(0.5, (double)(age > 0 ? age : 0) / week);
                if (u_boost[i]) {
                    low += boost;
                }
            }
            s_low[u_slot[i]] = low;
            if (heap_n < keep) {
                heap_push(heap, &heap_n, low);
            } else if (low > heap[0]) {
                heap_replace_min(heap, heap_n, low);
            }
            if (heap_n == keep) {
                cut = heap[0] - tl - slack;
            }
        }
#undef SCORE
#undef RECORD
        for (i = 0; i < n_union; i++) {
            if (u_state[i] == 2 && (keep == 0 || heap_n < keep || s_low[u_slot[i]] >= cut)) {
                room++;
            }
        }
        *n_out = room;
        if (room > out_cap) {
            rc = MEMDB_MORE_ROOM;
            goto done;
        }
        room = 0;
        for (i = 0; i < n_union; i++) {
            if (u_state[i] == 2 && (keep == 0 || heap_n < keep || s_low[u_slot[i]] >= cut)) {
                const unsigned char *rec = record_of(in, u_doc[i]); /* scored: it has a record */
                const uint32_t doc = u_doc[i];
                out_doc[room] = doc;
                out_bm25[room] = s_bm[u_slot[i]];
                out_dl[room] = rd32(rec + 12);
                out_ts[room] = rd64(rec);
                out_suffix[room] = rd32(rec + 8);
                out_code[room] = level_byte(in, doc) << 2 | (rd16(rec + 16) & 3);
                for (t = 0; t < nt; t++) {
                    long tf = row_tf(in, tp, t, doc, ROW(i), &bad); /* a scored document's blocks are decoded */
                    out_tf[room * nt + t] = tf > 0 ? (uint32_t)tf : 0;
                }
                room++;
            }
        }
    }
#undef ROW
done:
    if (tp) {
        for (t = 0; t < nt; t++) {
            free(tp[t].docs);
            free(tp[t].tfs);
            free(tp[t].b_bound);
            free(tp[t].b_off);
            free(tp[t].b_first);
            free(tp[t].b_last);
            free(tp[t].b_done);
        }
    }
    free(tp);
    free(pos);
    free(u_doc);
    free(u_slot);
    free(u_ub);
    free(u_state);
    free(u_boost);
    free(u_tf);
    free(s_bm);
    free(s_low);
    free(heap);
    free(c_extra);
    free(c_known);
    return rc;
}

typedef struct {
    int has_lo, has_hi, outcome;
    int64_t lo_us, hi_us;
    size_t before, after;
    int has_newest; /* newest_before is known (a counted-whole match's time is not, until looked up) */
    int64_t newest_before;
    const int64_t *newest, *oldest; /* the chunk summaries (NULL: none) */
} outside_count;

/* Take ts, a match's time before lo, into newest_before. */
static inline void see_before(outside_count *c, int64_t ts)
{
    if (!c->has_newest || ts > c->newest_before) {
        c->newest_before = ts;
        c->has_newest = 1;
    }
}

/* Count doc, a match, where its record's time falls (when it passes the outcome); 0, or -1 when
 * it has no live record. */
static inline int count_match(const memdb_text_input *in, uint32_t doc, outside_count *c)
{
    const unsigned char *rec = record_of(in, doc);
    int64_t ts;
    if (rec == NULL) {
        return -1;
    }
    if (c->outcome >= 0 && !outcome_passes(c->outcome, (int)(rd16(rec + 16) & 3))) {
        return 0;
    }
    ts = rd64(rec);
    if (c->has_lo && ts < c->lo_us) {
        see_before(c, ts);
        c->before++;
    }
    if (c->has_hi && ts >= c->hi_us) {
        c->after++;
    }
    return 0;
}

/* Whether every live record of chunks c0..c1 lies on one known side of each bound (then *before:
 * all are before lo, *after: all at or after hi, *bound: the newest of them); 0 when some may lie
 * either side, a chunk has no summary, or none of them has a live record (their documents are
 * looked up, so a match without a record is still refused). A chunk without a live record holds
 * no match, so among others it decides nothing. The twin is postings._Tally.chunks_side. */
static inline int chunks_side(const memdb_text_input *in, const outside_count *c, size_t c0, size_t c1, int *before, int *after,
                              int64_t *bound)
{
    int64_t newest = 0, oldest = 0;
    int any = 0;
    size_t k;
    if (c->newest == NULL || c1 >= in->n_chunks) {
        return 0;
    }
    for (k = c0; k <= c1; k++) {
        if (c->oldest[k] > c->newest[k]) {
            continue; /* no live record */
        }
        if (!any || c->newest[k] > newest) {
            newest = c->newest[k];
        }
        if (!any || c->oldest[k] < oldest) {
            oldest = c->oldest[k];
        }
        any = 1;
    }
    if (!any || (c->has_lo && newest >= c->lo_us && oldest < c->lo_us) || (c->has_hi && newest >= c->hi_us && oldest < c->hi_us)) {
        return 0;
    }
    *before = c->has_lo && newest < c->lo_us;
    *after = c->has_hi && oldest >= c->hi_us;
    *bound = newest;
    return 1;
}

/* Matches counted before lo without their times: a block (docs NULL: at is its index) or the run
 * docs[at..end) of one chunk, with the newest time any of them can have. */
typedef struct {
    int64_t bound;
    size_t at, end;
} before_run;

static int by_bound_desc(const void *a, const void *b)
{
    const before_run *x = a, *y = b;
    if (x->bound != y->bound) {
        return x->bound < y->bound ? 1 : -1;
    }
    return x->at < y->at ? -1 : x->at > y->at; /* ties in input order, as the twin's stable sort */
}

/* Runs picked by a pass each before the rest are sorted: the newest is almost always found in the
 * first run or two, and sorting them all was a third of an empty window's count at a million. */
#define PICKED_UNSORTED 8

/* newest_before from runs counted whole: their documents looked up (blocks decoded into buf) in
 * decreasing order of their bound (ties in input order), until no bound can beat the newest found. */
static int newest_of_runs(const memdb_text_input *in, before_run *runs, size_t n_runs, const uint32_t *docs, uint32_t *buf,
                          uint32_t *tfs, outside_count *c, size_t *bad)
{
    size_t r, k;
    for (r = 0; r < n_runs; r++) {
        const uint32_t *d;
        size_t n;
        if (r < PICKED_UNSORTED) { /* the next in order: the same as the sort's (by_bound_desc is a total order) */
            size_t best = r;
            before_run tmp;
            for (k = r + 1; k < n_runs; k++) {
                if (by_bound_desc(&runs[k], &runs[best]) < 0) {
                    best = k;
                }
            }
            tmp = runs[r];
            runs[r] = runs[best];
            runs[best] = tmp;
        } else if (r == PICKED_UNSORTED) {
            qsort(runs + r, n_runs - r, sizeof *runs, by_bound_desc);
        }
        if (c->has_newest && runs[r].bound <= c->newest_before) {
            break;
        }
        d = docs ? docs + runs[r].at : buf;
        n = runs[r].end - runs[r].at;
        if (docs == NULL) {
            long got = memdb_decode_block(in->blocks[runs[r].at], in->block_lens[runs[r].at], buf, tfs);
            if (got < 0) {
                *bad = runs[r].at;
                return MEMDB_BAD_BLOCK;
            }
            n = (size_t)got;
        }
        for (k = 0; k < n; k++) {
            const unsigned char *rec = record_of(in, d[k]);
            if (rec == NULL) {
                *bad = d[k];
                return MEMDB_BAD_COLUMN;
            }
            see_before(c, rd64(rec));
        }
    }
    return MEMDB_OK;
}

/* One list's blocks (from bi0, nb of them), no REQUIRE list, no outcome: a block whose documents'
 * chunks all lie on one side of each bound is counted from its header, n documents. Only its
 * header is checked (n, range, order after the block before): unless it is searched for
 * newest_before, its postings are not decoded (varints, gaps, tfs, its last document) nor its
 * documents' records looked up (live, with a level), so damage there is not seen here; memdb
 * check (memdb/memory/check.py) verifies both. The twin is postings._py_count_blocks. */
static int count_blocks(const memdb_text_input *in, size_t bi0, size_t nb, outside_count *c, uint32_t *buf, uint32_t *tfs,
                        size_t *bad)
{
    before_run *runs = malloc((nb ? nb : 1) * sizeof *runs);
    size_t j, k, n_runs = 0;
    uint32_t prev_last = 0;
    int rc = MEMDB_OK;
    if (!runs) {
        return MEMDB_NO_MEMORY;
    }
    for (j = 0; j < nb; j++) {
        const size_t bi = bi0 + j;
        const unsigned char *blk = in->blocks[bi];
        uint32_t n, first, last;
        int before, after;
        int64_t bound;
        long got;
        if (in->block_lens[bi] < MEMDB_BLOCK_HEADER) {
            *bad = bi;
            rc = MEMDB_BAD_BLOCK;
            goto done;
        }
        n = rd16(blk);
        first = rd32(blk + 8);
        last = rd32(blk + 12);
        if (n == 0 || last < first || last - first < n - 1 || (j > 0 && first <= prev_last)) {
            *bad = bi;
            rc = MEMDB_BAD_BLOCK;
            goto done;
        }
        prev_last = last;
        if (chunks_side(in, c, first / MEMDB_CHUNK_DOCS, last / MEMDB_CHUNK_DOCS, &before, &after, &bound)) {
            if (before) {
                c->before += n;
                runs[n_runs].bound = bound;
                runs[n_runs].at = bi;
                runs[n_runs].end = bi + 1;
                n_runs++;
            }
            c->after += after ? n : 0;
            continue;
        }
        got = memdb_decode_block(blk, in->block_lens[bi], buf, tfs);
        if (got < 0) {
            *bad = bi;
            rc = MEMDB_BAD_BLOCK;
            goto done;
        }
        for (k = 0; k < (size_t)got; k++) {
            if (count_match(in, buf[k], c) < 0) {
                *bad = buf[k];
                rc = MEMDB_BAD_COLUMN;
                goto done;
            }
        }
    }
    rc = newest_of_runs(in, runs, n_runs, NULL, buf, tfs, c, bad);
done:
    free(runs);
    return rc;
}

int memdb_count_outside(const memdb_text_input *in, const int64_t *chunk_oldest, int has_lo, int64_t lo_us, int has_hi,
                        int64_t hi_us, int outcome, size_t *n_before, int64_t *newest_before, size_t *n_after, size_t *bad)
{
    const size_t nt = in->n_terms;
    size_t t, bi = 0, n_require = 0, n_read = 0, last_read = 0, read_bi = 0, total = 0, n_runs = 0, n_held = 0;
    uint32_t **docs = calloc(nt ? nt : 1, sizeof *docs);
    size_t *n = calloc(nt ? nt : 1, sizeof *n), *pos = calloc(nt ? nt : 1, sizeof *pos);
    /* decoded and not needed (tfs), or a block decoded alone (buf): room for any block */
    uint32_t *tfs = malloc(65535 * sizeof(uint32_t)), *buf = malloc(65535 * sizeof(uint32_t));
    uint32_t *held = NULL; /* matches counted before lo by their chunk, whose times are not read */
    before_run *runs = NULL;
    const int summarised = in->chunk_newest != NULL && chunk_oldest != NULL;
    outside_count c = {has_lo, has_hi, outcome, lo_us, hi_us, 0, 0, 0, 0, NULL, NULL};
    int rc = MEMDB_OK;
    *bad = 0;
    if (!docs || !n || !pos || !tfs || !buf) {
        rc = MEMDB_NO_MEMORY;
        goto done;
    }
    if (summarised) {
        c.newest = in->chunk_newest;
        c.oldest = chunk_oldest;
    }
    for (t = 0; t < nt; t++) {
        const int role = in->roles ? in->roles[t] : MEMDB_MATCH;
        n_require += role == MEMDB_REQUIRE;
        if (role != MEMDB_RANK) {
            n_read++;
            last_read = t;
            read_bi = bi;
        }
        bi += in->term_blocks[t];
    }
    if (summarised && n_read == 1 && n_require == 0 && outcome < 0) { /* one list that matches (one tag, one word) */
        rc = count_blocks(in, read_bi, in->term_blocks[last_read], &c, buf, tfs, bad);
        goto done;
    }
    /* every block of every list but a RANK one, decoded and checked as memdb_text_search does */
    for (t = 0, bi = 0; t < nt; t++) {
        const int role = in->roles ? in->roles[t] : MEMDB_MATCH;
        size_t nb = in->term_blocks[t], room = 0, j;
        if (role == MEMDB_RANK) {
            bi += nb;
            continue;
        }
        for (j = 0; j < nb; j++) {
            if (in->block_lens[bi + j] < MEMDB_BLOCK_HEADER) {
                *bad = bi + j;
                rc = MEMDB_BAD_BLOCK;
                goto done;
            }
            room += rd16(in->blocks[bi + j]);
        }
        total += room;
        docs[t] = malloc((room ? room : 1) * sizeof(uint32_t));
        if (!docs[t]) {
            rc = MEMDB_NO_MEMORY;
            goto done;
        }
        for (j = 0; j < nb; j++, bi++) {
            long got = memdb_decode_block(in->blocks[bi], in->block_lens[bi], docs[t] + n[t], tfs);
            if (got < 0 || (n[t] > 0 && docs[t][n[t]] <= docs[t][n[t] - 1])) {
                *bad = bi;
                rc = MEMDB_BAD_BLOCK;
                goto done;
            }
            n[t] += (size_t)got;
        }
    }
    if (summarised && outcome < 0) {
        held = malloc((total ? total : 1) * sizeof *held);
        runs = malloc((total ? total : 1) * sizeof *runs);
        if (!held || !runs) {
            rc = MEMDB_NO_MEMORY;
            goto done;
        }
    }
    /* the union in document order, as memdb_text_search's pass 1 keeps it */
    for (;;) {
        uint32_t doc = 0;
        int any = 0, matched = 0, before, after;
        size_t required = 0;
        int64_t bound;
        for (t = 0; t < nt; t++) {
            if (pos[t] < n[t] && (!any || docs[t][pos[t]] < doc)) {
                doc = docs[t][pos[t]];
                any = 1;
            }
        }
        if (!any) {
            break;
        }
        for (t = 0; t < nt; t++) {
            if (pos[t] < n[t] && docs[t][pos[t]] == doc) {
                int role = in->roles ? in->roles[t] : MEMDB_MATCH;
                pos[t]++;
                matched |= role == MEMDB_MATCH || role == MEMDB_BOOST;
                required += role == MEMDB_REQUIRE;
            }
        }
        if (!matched || required != n_require) {
            continue;
        }
        /* a chunk wholly on one side decides without the record (so not checked to be live),
         * unless an outcome needs it (held is NULL then) */
        if (held && chunks_side(in, &c, doc / MEMDB_CHUNK_DOCS, doc / MEMDB_CHUNK_DOCS, &before, &after, &bound)) {
            if (before) { /* held by chunk: a run per chunk, looked up only if it can hold the newest */
                c.before++;
                if (n_runs == 0 || held[runs[n_runs - 1].at] / MEMDB_CHUNK_DOCS != doc / MEMDB_CHUNK_DOCS) {
                    runs[n_runs].bound = bound;
                    runs[n_runs].at = n_held;
                    n_runs++;
                }
                held[n_held++] = doc;
                runs[n_runs - 1].end = n_held;
            }
            c.after += after;
            continue;
        }
        if (count_match(in, doc, &c) < 0) {
            *bad = doc;
            rc = MEMDB_BAD_COLUMN;
            goto done;
        }
    }
    if (n_runs) {
        rc = newest_of_runs(in, runs, n_runs, held, buf, tfs, &c, bad);
    }
done:
    *n_before = c.before;
    *newest_before = c.has_newest ? c.newest_before : 0;
    *n_after = c.after;
    for (t = 0; docs && t < nt; t++) {
        free(docs[t]);
    }
    free(docs);
    free(n);
    free(pos);
    free(tfs);
    free(buf);
    free(held);
    free(runs);
    return rc;
}

int memdb_lookup_tfs(const memdb_text_input *in, size_t n_docs, const uint32_t *docs, uint32_t *out_tf)
{
    const size_t nt = in->n_terms;
    size_t t, bi = 0;
    int rc = MEMDB_OK;
    /* room for any block a header can describe (n is a u16), so a damaged one cannot overrun */
    uint32_t *ds = malloc(65535 * sizeof(uint32_t)), *tfs = malloc(65535 * sizeof(uint32_t));
    if (!ds || !tfs) {
        free(ds);
        free(tfs);
        return MEMDB_NO_MEMORY;
    }
    memset(out_tf, 0, n_docs * (nt ? nt : 1) * sizeof(uint32_t));
    for (t = 0; t < nt; t++) {
        size_t nb = in->term_blocks[t], j, d = 0;
        for (j = 0; j < nb; j++, bi++) {
            const unsigned char *blk = in->blocks[bi];
            size_t len = in->block_lens[bi], m = 0;
            uint32_t first, last;
            long got;
            if (len < MEMDB_BLOCK_HEADER) {
                rc = MEMDB_BAD_BLOCK;
                goto done;
            }
            first = rd32(blk + 8);
            last = rd32(blk + 12);
            while (d < n_docs && docs[d] < first) {
                d++; /* in no block of this term */
            }
            if (d == n_docs || docs[d] > last) {
                continue; /* no asked document falls in this block: its postings are not decoded */
            }
            got = memdb_decode_block(blk, len, ds, tfs);
            if (got < 0) {
                rc = MEMDB_BAD_BLOCK;
                goto done;
            }
            while (d < n_docs && docs[d] <= last) {
                while (m < (size_t)got && ds[m] < docs[d]) {
                    m++;
                }
                if (m < (size_t)got && ds[m] == docs[d]) {
                    out_tf[d * nt + t] = tfs[m];
                }
                d++;
            }
        }
    }
done:
    free(ds);
    free(tfs);
    return rc;
}

long memdb_entry_codes(const unsigned char *values, size_t n, const unsigned char *levels, size_t n_levels, uint32_t *codes) {
    for (size_t i = 0; i < n; i++) {
        const unsigned char *v = values + 5 * i;
        if (v[0] != 0xCE) {
            return (long)i;
        }
        uint32_t entry = (uint32_t)v[1] << 24 | (uint32_t)v[2] << 16 | (uint32_t)v[3] << 8 | (uint32_t)v[4];
        uint32_t doc = entry >> 2;
        if (doc >= n_levels) {
            return (long)i;
        }
        codes[i] = (uint32_t)levels[doc] << 2 | (entry & 3);
    }
    return -1;
}
