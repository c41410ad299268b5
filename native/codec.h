/* memdb key codec helper: the layout check behind codec.decode_many (memdb/engine/codec.py).
 *
 * A key of the globals is a run of encoded subscripts; a string subscript is 0x60, its UTF-8
 * with 0x00 escaped as 00 FF, then 0x00. codec.py holds the format and the pure-Python twin
 * of this check (codec._str_layout); keep the two in step (tests/engine/test_codec_native.py
 * compares them). native/build_scorer.py repeats the prototype in its cdef: change both.
 *
 * Python objects cannot cross cffi, so C only answers whether a chunk of keys takes the
 * fast path, and Python then decodes the chunk in one call and splits it in one more.
 */
#ifndef MEMDB_CODEC_H
#define MEMDB_CODEC_H

#include <stddef.h>

/* The n keys lie back to back in blob, key i taking lens[i] bytes. If every key is a
 * non-empty run of k string subscripts holding no NUL (0x60, bytes other than 0x00, 0x00;
 * so no escaped NUL either), the same k for every key, return k; else return -1.
 * UTF-8 validity is not checked here (the caller's decode does it). */
long memdb_str_layout(const char *blob, const size_t *lens, size_t n);

#endif
