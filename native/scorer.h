/* memdb relevance scorer: batch scoring and top-k selection (DESIGN.md section 5).
 *
 * The pure-Python twin in memdb/native.py computes the same formula in the same
 * operation order; keep the two in step (tests/test_native.py compares them).
 * native/build_scorer.py repeats these prototypes in its cdef: change both together.
 */
#ifndef MEMDB_SCORER_H
#define MEMDB_SCORER_H

#include <stddef.h>

/* Indices into the params array of memdb_score_batch. */
enum {
    MEMDB_W_FREQ = 0,
    MEMDB_W_TAGS = 1,
    MEMDB_W_AGE = 2,
    MEMDB_W_FEEDBACK = 3,
    MEMDB_FREQ_SATURATION = 4,
    MEMDB_AGE_HALF_LIFE_DAYS = 5,
    MEMDB_N_PARAMS = 6
};

/* Score n episodes on 0-10. out_components (n*4: frequency, tags, age, feedback) may be NULL.
 * params must satisfy memdb.native.ScoreParams: finite, weights >= 0, saturation >= 1,
 * half-life > 0. A NaN input never yields a NaN score (see scorer.c). */
void memdb_score_batch(size_t n, const double *access_counts, const double *tag_weights,
                       const double *ages_days, const double *feedback,
                       const unsigned char *has_feedback, const double *params,
                       double *out_scores, double *out_components);

/* memdb_score_batch of one episode, its arguments passed by value (feedback NaN: none): a
 * capture scores one episode a call, where converting four arrays cost more than the scoring. */
double memdb_score_one(double access_count, double tag_weight, double age_days, double feedback, const double *params);

/* Write to out_idx (room for min(n, k)) the indices of the k highest scores, highest first,
 * ties by lower index, NaN below every number; return how many were written. */
size_t memdb_top_k(size_t n, const double *scores, size_t k, size_t *out_idx);

#endif /* MEMDB_SCORER_H */
