/* memdb relevance scorer (C99). See scorer.h for the contract.
 *
 * Operation order matters: the pure-Python twin (memdb/native.py) evaluates the same
 * expressions left to right, and the build disables FMA contraction, so both give the
 * same doubles on the same libm (tests/test_native.py::test_c_matches_twin).
 */
#include "scorer.h"

#include <math.h>

/* NaN handling, mirrored by the twin: a NaN input is treated as missing, so it can never
 * poison a score or the ranking built on it.
 *   count NaN or < 0  -> 0 accesses       tag NaN -> weight 0
 *   age NaN           -> infinitely old   feedback NaN -> no feedback (5) */

static double clamp_nan_low(double x, double lo, double hi)
{
    if (isnan(x) || x < lo) {
        return lo;
    }
    return x > hi ? hi : x;
}

/* One episode's score, and its components into c (4 doubles) unless c is NULL; log_saturation
 * is log1p(params[MEMDB_FREQ_SATURATION]), computed once per batch. */
static double score_one(double count, double tag_weight, double age, double feedback, int has_feedback,
                        const double *params, double log_saturation, double *c)
{
    double ratio, freq, tags, recency, fb, score;

    if (isnan(count) || count < 0.0) {
        count = 0.0;
    }
    ratio = log1p(count) / log_saturation;
    freq = 10.0 * (ratio < 1.0 ? ratio : 1.0);

    tags = 10.0 * clamp_nan_low(tag_weight, 0.0, 1.0);

    if (isnan(age)) {
        age = HUGE_VAL;
    } else if (age < 0.0) {
        age = 0.0; /* clock skew: an access "in the future" is as fresh as now */
    }
    /* 0.5^x as 2^-x: exp2 is ~3x faster than pow in glibc; the twin calls math.exp2 too */
    recency = 10.0 * exp2(-(age / params[MEMDB_AGE_HALF_LIFE_DAYS]));

    if (has_feedback && !isnan(feedback)) {
        fb = 5.0 * (clamp_nan_low(feedback, -1.0, 1.0) + 1.0);
    } else {
        fb = 5.0;
    }

    score = params[MEMDB_W_FREQ] * freq + params[MEMDB_W_TAGS] * tags + params[MEMDB_W_AGE] * recency +
            params[MEMDB_W_FEEDBACK] * fb;
    if (c != NULL) {
        c[0] = freq;
        c[1] = tags;
        c[2] = recency;
        c[3] = fb;
    }
    /* weights sum to 1, so only rounding can leave [0, 10]; clamp it back */
    return score < 0.0 ? 0.0 : (score > 10.0 ? 10.0 : score);
}

void memdb_score_batch(size_t n, const double *access_counts, const double *tag_weights,
                       const double *ages_days, const double *feedback,
                       const unsigned char *has_feedback, const double *params,
                       double *out_scores, double *out_components)
{
    const double log_saturation = log1p(params[MEMDB_FREQ_SATURATION]);
    size_t i;

    for (i = 0; i < n; i++) {
        out_scores[i] = score_one(access_counts[i], tag_weights[i], ages_days[i], feedback[i], has_feedback[i],
                                  params, log_saturation, out_components == NULL ? NULL : out_components + 4 * i);
    }
}

double memdb_score_one(double access_count, double tag_weight, double age_days, double feedback, const double *params)
{
    return score_one(access_count, tag_weight, age_days, feedback, 1, params, log1p(params[MEMDB_FREQ_SATURATION]), NULL);
}

/* 1 if element a ranks strictly before element b: higher score first, NaN after every
 * number, lower index on ties. A strict total order, so top-k is deterministic. */
static int ranks_before(const double *scores, size_t a, size_t b)
{
    const double x = scores[a];
    const double y = scores[b];
    const int x_nan = isnan(x);
    const int y_nan = isnan(y);

    if (x_nan || y_nan) {
        return x_nan && y_nan ? a < b : y_nan;
    }
    if (x != y) {
        return x > y;
    }
    return a < b;
}

/* Restore the heap below position i. The root holds the lowest-ranked kept element, so a
 * newcomer only has to beat the root to enter the top k. */
static void sift_down(size_t *heap, size_t size, size_t i, const double *scores)
{
    for (;;) {
        size_t left, lowest = i;
        size_t tmp;

        if (i >= size / 2) {
            return; /* no children; also keeps 2 * i + 1 from overflowing */
        }
        left = 2 * i + 1;
        if (ranks_before(scores, heap[lowest], heap[left])) {
            lowest = left;
        }
        if (left + 1 < size && ranks_before(scores, heap[lowest], heap[left + 1])) {
            lowest = left + 1;
        }
        if (lowest == i) {
            return;
        }
        tmp = heap[i];
        heap[i] = heap[lowest];
        heap[lowest] = tmp;
        i = lowest;
    }
}

size_t memdb_top_k(size_t n, const double *scores, size_t k, size_t *out_idx)
{
    const size_t m = k < n ? k : n;
    size_t i, end;

    if (m == 0) {
        return 0;
    }
    /* out_idx doubles as the heap, so no allocation: O(m) heapify, O(n log m) scan. */
    for (i = 0; i < m; i++) {
        out_idx[i] = i;
    }
    for (i = m / 2; i-- > 0;) {
        sift_down(out_idx, m, i, scores);
    }
    for (i = m; i < n; i++) {
        if (ranks_before(scores, i, out_idx[0])) {
            out_idx[0] = i;
            sift_down(out_idx, m, 0, scores);
        }
    }
    /* Heap sort in place: each pass moves the lowest-ranked remaining element to the back,
     * leaving the best first. */
    for (end = m - 1; end > 0; end--) {
        size_t tmp = out_idx[0];
        out_idx[0] = out_idx[end];
        out_idx[end] = tmp;
        sift_down(out_idx, end, 0, scores);
    }
    return m;
}
