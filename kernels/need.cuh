// NEED(X): the constants a kernel takes from kernels/catalog.yaml, named once near the top of the file that uses
// them. A build that does not define X stops at that line with "X is not defined: kernels/catalog.yaml sets it
// for every build of this file"; a kernel file keeps no default of its own for what the catalog sets.
// How: stringified after expansion, a defined X is its value; an undefined one is its own name.
#pragma once

#define NEED_TEXT_(x) #x
#define NEED_TEXT(x) NEED_TEXT_(x)
constexpr bool need_same_text(const char *a, const char *b)
{
    return *a == *b && (*a == 0 || need_same_text(a + 1, b + 1));
}
#define NEED(X)                                                                                                      \
    static_assert(!need_same_text(NEED_TEXT(X), #X),                                                                 \
                  #X " is not defined: kernels/catalog.yaml sets it for every build of this file")
