/* memdb key codec helper (C99). See codec.h for the format and the contract. */
#include "codec.h"

#include <string.h>

long memdb_str_layout(const char *blob, const size_t *lens, size_t n)
{
    const unsigned char *p = (const unsigned char *)blob;
    long per_key = -1;
    for (size_t i = 0; i < n; i++) {
        const unsigned char *end = p + lens[i];
        long strings = 0;
        if (p == end)
            return -1; /* an empty key: the twin declines it too */
        while (p < end) {
            if (*p != 0x60)
                return -1; /* a number, bytes, or an escaped NUL's 0xFF */
            const unsigned char *nul = memchr(p + 1, 0, (size_t)(end - p - 1));
            if (nul == NULL)
                return -1; /* unterminated */
            p = nul + 1;
            strings++;
        }
        if (per_key < 0)
            per_key = strings;
        else if (strings != per_key)
            return -1;
    }
    return per_key;
}
