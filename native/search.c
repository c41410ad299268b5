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
    size_t n;       /* postings of one term */
    uint32_t *docs;
    uint32_t *tfs;
    double *ub;     /* the term's bound in each posting's block */
} term_postings;

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
    size_t n_require = 0;
    const int filtered = has_lo || has_hi || outcome >= 0;
    term_postings *tp = NULL;
    size_t *pos = NULL, n_union = 0, cap_union = 0, t, i, bi = 0, room = 0;
    uint32_t *u_doc = NULL, *u_tf = NULL;
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
    for (t = 0; t < nt; t++) {
        if (in->roles && in->roles[t] == MEMDB_REQUIRE) {
            n_require++;
        }
    }
    tp = calloc(nt ? nt : 1, sizeof *tp);
    pos = calloc(nt ? nt : 1, sizeof *pos);
    if (!tp || !pos) {
        rc = MEMDB_NO_MEMORY;
        goto done;
    }
    /* decode every block of every term */
    for (t = 0; t < nt; t++) {
        size_t nb = in->term_blocks[t], room_t = 0, j;
        for (j = 0; j < nb; j++) {
            size_t len = in->block_lens[bi + j];
            if (len < MEMDB_BLOCK_HEADER) {
                *n_out = bi + j;
                rc = MEMDB_BAD_BLOCK;
                goto done;
            }
            room_t += rd16(in->blocks[bi + j]);
        }
        tp[t].docs = malloc((room_t ? room_t : 1) * sizeof(uint32_t));
        tp[t].tfs = malloc((room_t ? room_t : 1) * sizeof(uint32_t));
        tp[t].ub = malloc((room_t ? room_t : 1) * sizeof(double));
        if (!tp[t].docs || !tp[t].tfs || !tp[t].ub) {
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
    u_ub = malloc((cap_union ? cap_union : 1) * sizeof(double));
    u_bm = calloc(cap_union ? cap_union : 1, sizeof(double));
    u_low = calloc(cap_union ? cap_union : 1, sizeof(double));
    u_state = calloc(cap_union ? cap_union : 1, 1);
    u_rec = calloc(cap_union ? cap_union : 1, sizeof *u_rec);
    u_boost = calloc(cap_union ? cap_union : 1, 1);
    heap = malloc((keep ? keep : 1) * sizeof(double));
    c_extra = malloc((in->n_chunks ? in->n_chunks : 1) * sizeof(double));
    c_known = calloc(in->n_chunks ? in->n_chunks : 1, 1);
    if (!u_doc || !u_tf || !u_ub || !u_bm || !u_low || !u_state || !u_rec || !u_boost || !heap || !c_extra || !c_known) {
        rc = MEMDB_NO_MEMORY;
        goto done;
    }
    /* pass 1: the union in document order, filtered; block bounds summed in term order */
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
    /* pass 2: the best BM25, scoring only documents whose bound beats the best so far */
    for (i = 0; i < n_union; i++) {
        if (i > 0 && u_ub[i] <= top) {
            continue;
        }
        if (u_rec[i] == NULL && (u_rec[i] = record_of(in, u_doc[i])) == NULL) {
            *n_out = u_doc[i];
            rc = MEMDB_BAD_COLUMN;
            goto done;
        }
        u_bm[i] = exact_bm25(in, u_tf + i * nt, (double)rd32(u_rec[i] + 12), avgdl, k1, b);
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
            if (u_rec[i] == NULL && (u_rec[i] = record_of(in, u_doc[i])) == NULL) {
                *n_out = u_doc[i];
                rc = MEMDB_BAD_COLUMN;
                goto done;
            }
            if (u_state[i] == 0) {
                u_bm[i] = exact_bm25(in, u_tf + i * nt, (double)rd32(u_rec[i] + 12), avgdl, k1, b);
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
        }
    }
    free(tp);
    free(pos);
    free(u_doc);
    free(u_tf);
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
