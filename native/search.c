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

static int64_t rd64(const unsigned char *p)
{
    uint64_t v = 0;
    int i;
    for (i = 7; i >= 0; i--) {
        v = v << 8 | p[i];
    }
    return (int64_t)v;
}

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

/* The column record of doc, or NULL when it has none or it is not live. */
static const unsigned char *record_of(const memdb_text_input *in, uint32_t doc)
{
    size_t chunk = doc / MEMDB_CHUNK_DOCS;
    size_t off = (size_t)(doc % MEMDB_CHUNK_DOCS) * MEMDB_RECORD_BYTES;
    const unsigned char *rec;
    if (chunk >= in->n_chunks || in->chunk_lens[chunk] < off + MEMDB_RECORD_BYTES) {
        return NULL;
    }
    rec = in->chunks[chunk] + off;
    return rec[18] == 1 ? rec : NULL;
}

void memdb_chunk_summary(const unsigned char *chunk, size_t len, int64_t *newest, uint32_t *level)
{
    size_t off;
    int any = 0;
    *newest = 0;
    *level = 0;
    for (off = 0; off + MEMDB_RECORD_BYTES <= len; off += MEMDB_RECORD_BYTES) {
        const unsigned char *rec = chunk + off;
        int64_t ts;
        uint32_t lv;
        if (rec[18] != 1) {
            continue;
        }
        ts = rd64(rec);
        lv = rd16(rec + 16) >> 2;
        if (!any || ts > *newest) {
            *newest = ts;
        }
        if (lv > *level) {
            *level = lv;
        }
        any = 1;
    }
}

static double bm25_part(double idf, double tf, double dl, double avgdl, double k1, double b)
{
    return idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl));
}

/* A document's BM25 over the lists that are scored (MATCH and RANK), in list order, as the
 * twin sums it. */
static double exact_bm25(const memdb_text_input *in, const uint32_t *tf_row, double dl, double avgdl, double k1, double b)
{
    double s = 0.0;
    size_t t;
    for (t = 0; t < in->n_terms; t++) {
        if (tf_row[t] && !(in->roles && in->roles[t] > MEMDB_RANK)) {
            s += bm25_part(in->idf[t], (double)tf_row[t], dl, avgdl, k1, b);
        }
    }
    return s;
}

typedef struct {
    size_t n;        /* postings decoded so far */
    uint32_t *docs;
    uint32_t *tfs;
    double *ub;      /* the term's bound in each posting's block (merged lists) */
    /* a looked-up (long RANK) list: its blocks are found by their headers and decoded only when
     * a document that may be in one is scored */
    size_t nb, bi0;  /* its blocks, and the index of its first in in->blocks */
    uint32_t *b_first, *b_last;
    double *b_bound;
    size_t *b_off;   /* where each block's postings go in docs/tfs */
    unsigned char *b_done;
    size_t cur;      /* pass 1's block cursor */
} term_postings;

#define NO_BLOCK 0xFFFFFFFFu

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

/* The tf of doc in block j of a RANK list (0 when absent), decoding the block the first time;
 * -1 when it is damaged. */
static long rank_tf(const memdb_text_input *in, term_postings *tp, uint32_t j, uint32_t doc)
{
    size_t lo, hi, off = tp->b_off[j];
    if (!tp->b_done[j]) {
        long got = memdb_decode_block(in->blocks[tp->bi0 + j], in->block_lens[tp->bi0 + j], tp->docs + off, tp->tfs + off);
        if (got < 0) {
            return -1;
        }
        tp->b_done[j] = 1;
    }
    lo = off;
    hi = tp->b_off[j + 1];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (tp->docs[mid] < doc) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return (lo < tp->b_off[j + 1] && tp->docs[lo] == doc) ? (long)tp->tfs[lo] : 0;
}

/* A bound on a document's BM25 without decoding a looked-up list: its merged lists' exact parts
 * and the looked-up lists' block bounds, in term order, raised by 1e-12 against rounding. */
static double bm25_bound(const memdb_text_input *in, const term_postings *tp, const uint32_t *tf_row, const uint32_t *blk_row,
                         const size_t *rank_of, double dl, double avgdl, double k1, double b)
{
    double s = 0.0;
    size_t t;
    for (t = 0; t < in->n_terms; t++) {
        if (tp[t].b_first != NULL) {
            uint32_t blk = blk_row[rank_of[t]];
            if (blk != NO_BLOCK) {
                s += tp[t].b_bound[blk];
            }
        } else if (tf_row[t] && !(in->roles && in->roles[t] > MEMDB_RANK)) {
            s += bm25_part(in->idf[t], (double)tf_row[t], dl, avgdl, k1, b);
        }
    }
    return s * (1 + 1e-12);
}

int memdb_text_search(const memdb_text_input *in, const double *params, int64_t now_us, int has_lo,
                      int64_t lo_us, int has_hi, int64_t hi_us, int outcome, size_t keep, size_t *total, double *best,
                      size_t out_cap, size_t *n_out, uint32_t *out_doc, double *out_bm25,
                      uint32_t *out_tf, uint32_t *out_dl)
{
    const double avgdl = params[MEMDB_P_AVGDL], k1 = params[MEMDB_P_K1], b = params[MEMDB_P_B];
    const double week = params[MEMDB_P_WEEK_US], tl = params[MEMDB_P_TEXT_LEVEL];
    const double tw = params[MEMDB_P_TEXT_WEIGHT], rw = params[MEMDB_P_RECENCY_WEIGHT];
    const double slack = params[MEMDB_P_SLACK], max_level = params[MEMDB_P_MAX_LEVEL], boost = params[MEMDB_P_BOOST];
    const size_t nt = in->n_terms;
    size_t n_require = 0, n_rank = 0, merged = 0;
    const int filtered = has_lo || has_hi || outcome >= 0;
    term_postings *tp = NULL;
    size_t *pos = NULL, *rank_of = NULL, n_union = 0, cap_union = 0, t, i, bi = 0, room = 0;
    uint32_t *u_doc = NULL, *u_tf = NULL, *u_blk = NULL;
    double *u_ub = NULL, *u_bm = NULL, *u_low = NULL, *heap = NULL;
    unsigned char *u_state = NULL; /* 0 unscored, 1 scored, 2 scored and a candidate */
    unsigned char *u_boost = NULL;
    const unsigned char **u_rec = NULL;
    double *c_extra = NULL;        /* per chunk: what its level and recency can add at most */
    unsigned char *c_known = NULL; /* whether c_extra holds it yet */
    double top = 0.0;
    int rc = MEMDB_OK;

    *total = 0;
    *best = 0.0;
    *n_out = 0;
    tp = calloc(nt ? nt : 1, sizeof *tp);
    pos = calloc(nt ? nt : 1, sizeof *pos);
    rank_of = calloc(nt ? nt : 1, sizeof *rank_of);
    if (!tp || !pos || !rank_of) {
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
        if (role == MEMDB_RANK && pos[t] > merged) {
            rank_of[t] = n_rank++;
        }
    }
    /* decode every block of every merged list; a looked-up list's headers only */
    bi = 0;
    for (t = 0; t < nt; t++) {
        size_t nb = in->term_blocks[t], room_t = pos[t], j;
        const int rank = in->roles && in->roles[t] == MEMDB_RANK && room_t > merged;
        pos[t] = 0;
        tp[t].docs = malloc((room_t ? room_t : 1) * sizeof(uint32_t));
        tp[t].tfs = malloc((room_t ? room_t : 1) * sizeof(uint32_t));
        if (!tp[t].docs || !tp[t].tfs) {
            rc = MEMDB_NO_MEMORY;
            goto done;
        }
        if (rank) {
            tp[t].nb = nb;
            tp[t].bi0 = bi;
            tp[t].b_first = malloc((nb ? nb : 1) * sizeof(uint32_t));
            tp[t].b_last = malloc((nb ? nb : 1) * sizeof(uint32_t));
            tp[t].b_bound = malloc((nb ? nb : 1) * sizeof(double));
            tp[t].b_off = malloc((nb + 1) * sizeof(size_t));
            tp[t].b_done = calloc(nb ? nb : 1, 1);
            if (!tp[t].b_first || !tp[t].b_last || !tp[t].b_bound || !tp[t].b_off || !tp[t].b_done) {
                rc = MEMDB_NO_MEMORY;
                goto done;
            }
            tp[t].b_off[0] = 0;
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
                tp[t].b_bound[j] = bm25_part(in->idf[t], (double)rd16(blk + 2), (double)rd32(blk + 4), avgdl, k1, b);
                tp[t].b_off[j + 1] = tp[t].b_off[j] + n;
            }
            continue;
        }
        tp[t].ub = malloc((room_t ? room_t : 1) * sizeof(double));
        if (!tp[t].ub) {
            rc = MEMDB_NO_MEMORY;
            goto done;
        }
        for (j = 0; j < nb; j++, bi++) {
            const unsigned char *blk = in->blocks[bi];
            long got = memdb_decode_block(blk, in->block_lens[bi], tp[t].docs + tp[t].n, tp[t].tfs + tp[t].n);
            double bound;
            size_t m;
            if (got < 0 || (tp[t].n > 0 && tp[t].docs[tp[t].n] <= tp[t].docs[tp[t].n - 1])) {
                *n_out = bi;
                rc = MEMDB_BAD_BLOCK;
                goto done;
            }
            bound = (in->roles && in->roles[t] > MEMDB_RANK)
                        ? 0.0 /* tag lists are not scored */
                        : bm25_part(in->idf[t], (double)rd16(blk + 2), (double)rd32(blk + 4), avgdl, k1, b);
            for (m = 0; m < (size_t)got; m++) {
                tp[t].ub[tp[t].n + m] = bound;
            }
            tp[t].n += (size_t)got;
        }
        cap_union += tp[t].n;
    }
    u_doc = malloc((cap_union ? cap_union : 1) * sizeof(uint32_t));
    u_tf = calloc((cap_union ? cap_union : 1) * (nt ? nt : 1), sizeof(uint32_t));
    u_blk = malloc((cap_union ? cap_union : 1) * (n_rank ? n_rank : 1) * sizeof(uint32_t));
    u_ub = malloc((cap_union ? cap_union : 1) * sizeof(double));
    u_bm = calloc(cap_union ? cap_union : 1, sizeof(double));
    u_low = calloc(cap_union ? cap_union : 1, sizeof(double));
    u_state = calloc(cap_union ? cap_union : 1, 1);
    u_rec = calloc(cap_union ? cap_union : 1, sizeof *u_rec);
    u_boost = calloc(cap_union ? cap_union : 1, 1);
    heap = malloc((keep ? keep : 1) * sizeof(double));
    c_extra = malloc((in->n_chunks ? in->n_chunks : 1) * sizeof(double));
    c_known = calloc(in->n_chunks ? in->n_chunks : 1, 1);
    if (!u_doc || !u_tf || !u_blk || !u_ub || !u_bm || !u_low || !u_state || !u_rec || !u_boost || !heap || !c_extra || !c_known) {
        rc = MEMDB_NO_MEMORY;
        goto done;
    }
    /* pass 1: the union of the merged lists in document order, filtered; block bounds summed in
     * term order (a looked-up list's where the document falls in one of its blocks' ranges) */
    for (;;) {
        uint32_t doc = 0;
        int any = 0, matched = 0, boosted = 0;
        size_t required = 0;
        double ub = 0.0;
        const unsigned char *rec = NULL;
        for (t = 0; t < nt; t++) {
            if (pos[t] < tp[t].n && (!any || tp[t].docs[pos[t]] < doc)) {
                doc = tp[t].docs[pos[t]];
                any = 1;
            }
        }
        if (!any) {
            break;
        }
        for (t = 0; t < nt; t++) {
            if (tp[t].b_first != NULL) {
                size_t c = tp[t].cur;
                uint32_t blk = NO_BLOCK;
                while (c < tp[t].nb && tp[t].b_last[c] < doc) {
                    c++;
                }
                tp[t].cur = c;
                if (c < tp[t].nb && tp[t].b_first[c] <= doc) {
                    ub += tp[t].b_bound[c];
                    blk = (uint32_t)c;
                }
                u_blk[n_union * n_rank + rank_of[t]] = blk;
                continue;
            }
            if (pos[t] < tp[t].n && tp[t].docs[pos[t]] == doc) {
                int role = in->roles ? in->roles[t] : MEMDB_MATCH;
                u_tf[n_union * nt + t] = tp[t].tfs[pos[t]];
                ub += tp[t].ub[pos[t]];
                pos[t]++;
                matched |= role == MEMDB_MATCH || role == MEMDB_BOOST;
                boosted |= role == MEMDB_BOOST;
                required += role == MEMDB_REQUIRE;
            }
        }
        if (!matched || required < n_require) {
            memset(u_tf + n_union * nt, 0, nt * sizeof(uint32_t)); /* the row is the next document's */
            continue;
        }
        if (filtered) {
            int64_t ts;
            rec = record_of(in, doc);
            if (rec == NULL) {
                *n_out = doc;
                rc = MEMDB_BAD_COLUMN;
                goto done;
            }
            ts = rd64(rec);
            if ((has_lo && ts < lo_us) || (has_hi && ts >= hi_us) || (outcome >= 0 && (int)(rd16(rec + 16) & 3) != outcome)) {
                memset(u_tf + n_union * nt, 0, nt * sizeof(uint32_t)); /* the row is the next document's */
                continue;
            }
        }
        u_doc[n_union] = doc;
        u_ub[n_union] = ub * (1 + 1e-12); /* rounding never lets a bound fall below its score */
        u_rec[n_union] = rec;
        u_boost[n_union] = (unsigned char)boosted;
        n_union++;
    }
    *total = n_union;
    /* pass 2: the best BM25, scoring only documents whose bound beats the best so far; pass 3:
     * lower bounds. A document is scored once: its record read, its RANK frequencies looked up */
#define RECORD(i)                                                                                       \
    do {                                                                                                \
        if (u_rec[i] == NULL && (u_rec[i] = record_of(in, u_doc[i])) == NULL) {                         \
            *n_out = u_doc[i];                                                                          \
            rc = MEMDB_BAD_COLUMN;                                                                      \
            goto done;                                                                                  \
        }                                                                                               \
    } while (0)
#define BOUND(i) bm25_bound(in, tp, u_tf + (i) * nt, u_blk + (i) * n_rank, rank_of, (double)rd32(u_rec[i] + 12), avgdl, k1, b)
#define SCORE(i)                                                                                        \
    do {                                                                                                \
        RECORD(i);                                                                                      \
        for (t = 0; n_rank && t < nt; t++) {                                                            \
            if (tp[t].b_first != NULL) {                                                                \
                uint32_t blk = u_blk[(i) * n_rank + rank_of[t]];                                        \
                long tf = blk == NO_BLOCK ? 0 : rank_tf(in, &tp[t], blk, u_doc[i]);                     \
                if (tf < 0) {                                                                           \
                    *n_out = tp[t].bi0 + blk;                                                           \
                    rc = MEMDB_BAD_BLOCK;                                                               \
                    goto done;                                                                          \
                }                                                                                       \
                u_tf[(i) * nt + t] = (uint32_t)tf;                                                      \
            }                                                                                           \
        }                                                                                               \
        u_bm[i] = exact_bm25(in, u_tf + (i) * nt, (double)rd32(u_rec[i] + 12), avgdl, k1, b);           \
    } while (0)
    for (i = 0; i < n_union; i++) {
        if (i > 0 && u_ub[i] <= top) {
            continue;
        }
        if (i > 0 && n_rank) { /* a tighter bound first: a looked-up list's block is decoded only if needed */
            RECORD(i);
            if (BOUND(i) <= top) {
                continue;
            }
        }
        SCORE(i);
        u_state[i] = 1;
        if (i == 0 || u_bm[i] > top) {
            top = u_bm[i];
        }
    }
    *best = top;
    {
        const double norm = top > 0.0 ? top : 1.0;
        const double any_extra = tl * max_level + rw; /* a chunk without a summary: any level, now */
        const int summarised = in->chunk_newest != NULL && in->chunk_level != NULL;
        size_t heap_n = 0;
        double cut = -INFINITY;
        /* pass 3: lower bounds, skipping documents whose bound cannot reach the cut; newest
         * documents first (they have the best recency), so the heap fills with good ones early */
        for (i = n_union; i-- > 0;) {
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
            if (u_state[i] == 0) {
                if (keep > 0 && heap_n == keep && n_rank) {
                    /* the document's own level and recency, and its merged lists' exact parts,
                     * before a looked-up list's block is decoded */
                    int64_t age;
                    RECORD(i);
                    age = now_us - rd64(u_rec[i]);
                    if (tw * BOUND(i) / norm + tl * (double)(rd16(u_rec[i] + 16) >> 2) + rw * pow(0.5, (double)(age > 0 ? age : 0) / week) +
                            (u_boost[i] ? boost : 0.0) + slack <
                        cut) {
                        continue;
                    }
                }
                SCORE(i);
            }
            u_state[i] = 2;
            if (keep == 0) {
                continue;
            }
            {
                int64_t age = now_us - rd64(u_rec[i]);
                low = tw * u_bm[i] / norm + tl * (double)(rd16(u_rec[i] + 16) >> 2) +
                      rw * pow(0.5, (double)(age > 0 ? age : 0) / week);
                if (u_boost[i]) {
                    low += boost;
                }
            }
            u_low[i] = low;
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
#undef BOUND
#undef RECORD
        for (i = 0; i < n_union; i++) {
            if (u_state[i] == 2 && (keep == 0 || heap_n < keep || u_low[i] >= cut)) {
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
            if (u_state[i] == 2 && (keep == 0 || heap_n < keep || u_low[i] >= cut)) {
                out_doc[room] = u_doc[i];
                out_bm25[room] = u_bm[i];
                out_dl[room] = rd32(u_rec[i] + 12);
                memcpy(out_tf + room * nt, u_tf + i * nt, nt * sizeof(uint32_t));
                room++;
            }
        }
    }
done:
    if (tp) {
        for (t = 0; t < nt; t++) {
            free(tp[t].docs);
            free(tp[t].tfs);
            free(tp[t].ub);
            free(tp[t].b_first);
            free(tp[t].b_last);
            free(tp[t].b_bound);
            free(tp[t].b_off);
            free(tp[t].b_done);
        }
    }
    free(tp);
    free(pos);
    free(rank_of);
    free(u_doc);
    free(u_tf);
    free(u_blk);
    free(u_ub);
    free(u_bm);
    free(u_low);
    free(u_state);
    free(u_rec);
    free(u_boost);
    free(heap);
    free(c_extra);
    free(c_known);
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
