/* codegen/prelude.c — the fixed text at the top of every module, and the
 * random generators' source.
 *
 * Modules include no headers at all: f16/bf16 conversions are one PTX
 * instruction each (round to nearest even, the same bits as graph/dtype.c
 * for every number; NaNs stay NaN, though their payload bits may differ,
 * as those of computed NaNs differ between any two libms anyway), and the
 * vector types NVRTC predefines are enough. So a module compiles
 * with nothing but libnvrtc (no toolkit headers or include paths at run
 * time), and the source alone, stored in a plan file, rebuilds it.
 *
 * The random generators are graph/rng.c itself: the build embeds its text
 * (codegen/embed.cmake → bc_rng_c_text) and bc_emit_rng writes it after a
 * few definitions standing in for its #includes. Compiled with
 * -default-device its functions become device functions, and with
 * --fmad=false they round exactly as gcc's -std=c11 build does, so both
 * give the same bits. */
#include "codegen/internal.h"

#include <string.h>

static const char prelude[] =
    "// braid generated module (codegen/): do not edit\n"
    "typedef unsigned long long bc_u64;\n"
    "\n"
    "// f16 / bf16 <-> f32, round to nearest even (as graph/dtype.c; a NaN\n"
    "// stays a NaN, its payload bits are the hardware's)\n"
    "static __device__ __forceinline__ float bc_h2f(unsigned short h) {\n"
    "    float f;\n"
    "    asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h));\n"
    "    return f;\n"
    "}\n"
    "static __device__ __forceinline__ unsigned short bc_f2h(float f) {\n"
    "    unsigned short h;\n"
    "    asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f));\n"
    "    return h;\n"
    "}\n"
    "static __device__ __forceinline__ float bc_b2f(unsigned short h) {\n"
    "    return __uint_as_float((unsigned)h << 16);\n"
    "}\n"
    "static __device__ __forceinline__ unsigned short bc_f2b(float f) {\n"
    "#if __CUDA_ARCH__ >= 800\n"
    "    unsigned short h;\n"
    "    asm(\"cvt.rn.bf16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f));\n"
    "    return h;\n"
    "#else\n"
    "    unsigned x = __float_as_uint(f);\n"
    "    if ((x & 0x7fffffffu) > 0x7f800000u)\n"
    "        return (unsigned short)((x >> 16) | 0x40u);\n"
    "    x += 0x7fffu + ((x >> 16) & 1u);\n"
    "    return (unsigned short)(x >> 16);\n"
    "#endif\n"
    "}\n"
    "// a value rounded to f16 / bf16 and held in float\n"
    "static __device__ __forceinline__ float bc_rh(float x) {\n"
    "    return bc_h2f(bc_f2h(x));\n"
    "}\n"
    "static __device__ __forceinline__ float bc_rb(float x) {\n"
    "    return bc_b2f(bc_f2b(x));\n"
    "}\n"
    "\n"
    "// max / min: NaN when either side is NaN (x + y is that NaN)\n"
    "static __device__ __forceinline__ float bc_maxf(float x, float y) {\n"
    "    return (x != x || y != y) ? x + y : (x > y ? x : y);\n"
    "}\n"
    "static __device__ __forceinline__ float bc_minf(float x, float y) {\n"
    "    return (x != x || y != y) ? x + y : (x < y ? x : y);\n"
    "}\n"
    "static __device__ __forceinline__ double bc_maxd(double x, double y) {\n"
    "    return (x != x || y != y) ? x + y : (x > y ? x : y);\n"
    "}\n"
    "static __device__ __forceinline__ double bc_mind(double x, double y) {\n"
    "    return (x != x || y != y) ? x + y : (x < y ? x : y);\n"
    "}\n"
    "static __device__ __forceinline__ int bc_maxi(int x, int y) {\n"
    "    return x > y ? x : y;\n"
    "}\n"
    "static __device__ __forceinline__ int bc_mini(int x, int y) {\n"
    "    return x < y ? x : y;\n"
    "}\n"
    "// i32: x / 0 = 0; INT32_MIN / -1 wraps like negation\n"
    "static __device__ __forceinline__ int bc_divi(int x, int y) {\n"
    "    if (y == 0) return 0;\n"
    "    if (y == -1) return (int)(0u - (unsigned)x);\n"
    "    return x / y;\n"
    "}\n"
    "// elemwise helper: mod / fmod / shifts, graph/scalar.h's rules\n"
    "static __device__ __forceinline__ int bc_fmodi(int x, int y) {\n"
    "    if (y == 0 || y == -1) return 0;\n"
    "    return x % y;\n"
    "}\n"
    "static __device__ __forceinline__ int bc_modi(int x, int y) {\n"
    "    int r = bc_fmodi(x, y);\n"
    "    return r != 0 && (r < 0) != (y < 0) ? r + y : r;\n"
    "}\n"
    "static __device__ __forceinline__ float bc_modf(float x, float y) {\n"
    "    float r = fmodf(x, y);\n"
    "    if (r != 0 && (r < 0) != (y < 0)) return r + y;\n"
    "    return r == 0 ? copysignf(0.0f, y) : r;\n"
    "}\n"
    "static __device__ __forceinline__ double bc_modd(double x, double y) {\n"
    "    double r = fmod(x, y);\n"
    "    if (r != 0 && (r < 0) != (y < 0)) return r + y;\n"
    "    return r == 0 ? copysign(0.0, y) : r;\n"
    "}\n"
    "static __device__ __forceinline__ int bc_shli(int x, int y) {\n"
    "    if (y < 0 || y >= 32) return 0;\n"
    "    return (int)((unsigned)x << y);\n"
    "}\n"
    "static __device__ __forceinline__ int bc_shri(int x, int y) {\n"
    "    if (y < 0 || y >= 32) return x < 0 ? -1 : 0;\n"
    "    return x < 0 ? ~(~x >> y) : x >> y;\n"
    "}\n"
    "// float -> i32: truncate, saturate, NaN -> 0\n"
    "static __device__ __forceinline__ int bc_d2i(double v) {\n"
    "    if (v != v) return 0;\n"
    "    if (v >= 2147483647.0) return 2147483647;\n"
    "    if (v <= -2147483648.0) return (int)0x80000000u;\n"
    "    return (int)v;\n"
    "}\n"
    "// float -> i64: the same (2^63 is the first double past INT64_MAX)\n"
    "static __device__ __forceinline__ long long bc_d2l(double v) {\n"
    "    if (v != v) return 0;\n"
    "    if (v >= 9223372036854775808.0) return 0x7fffffffffffffffLL;\n"
    "    if (v <= -9223372036854775808.0) return (long long)0x8000000000000000ULL;\n"
    "    return (long long)v;\n"
    "}\n"
    "\n"
    "// the run check record (codegen/codegen.h, bc_run_check): the first\n"
    "// failure claims it, kind and node in one 64-bit compare-and-swap\n"
    "struct __align__(8) bc_check {\n"
    "    unsigned kind, node;\n"
    "    long long a, b, c;\n"
    "};\n"
    "static __device__ __forceinline__ unsigned long long bc_check_claim(\n"
    "    bc_check *r, unsigned kind, unsigned node) {\n"
    "    const unsigned long long me =\n"
    "        (unsigned long long)kind | ((unsigned long long)node << 32);\n"
    "    const unsigned long long old =\n"
    "        atomicCAS((unsigned long long *)r, 0ull, me);\n"
    "    return old == 0ull ? me : old;\n"
    "}\n"
    "static __device__ __noinline__ void bc_check_fail(bc_check *r, unsigned "
    "kind,\n"
    "    unsigned node, long long a, long long b, long long c) {\n"
    "    const unsigned long long me =\n"
    "        (unsigned long long)kind | ((unsigned long long)node << 32);\n"
    "    if (atomicCAS((unsigned long long *)r, 0ull, me) != 0ull) return;\n"
    "    r->a = a;\n"
    "    r->b = b;\n"
    "    r->c = c;\n"
    "}\n"
    "// element i failed: the record claimed for node (or already its), the\n"
    "// lowest failing element kept as c = INT64_MAX - i (an atomic max on\n"
    "// the zeroed field); a later launch turns it into the final record\n"
    "static __device__ __noinline__ void bc_check_first(bc_check *r, "
    "unsigned kind,\n"
    "    unsigned node, long long i) {\n"
    "    const unsigned long long me =\n"
    "        (unsigned long long)kind | ((unsigned long long)node << 32);\n"
    "    if (bc_check_claim(r, kind, node) != me) return;\n"
    "    atomicMax((unsigned long long *)&r->c,\n"
    "              (unsigned long long)(0x7fffffffffffffffLL - i));\n"
    "}\n"
    "\n"
    "static __device__ __forceinline__ bool bc_al16(const void *p) {\n"
    "    return ((bc_u64)p & 15u) == 0;\n"
    "}\n"
    "// N elements of T from / to 16-byte (or smaller, for small N*sizeof T)\n"
    "// aligned memory in as few wide accesses as possible\n"
    "template <typename T, int N>\n"
    "static __device__ __forceinline__ void bc_vload(T (&d)[N], const T *p) "
    "{\n"
    "    constexpr int B = (int)sizeof(T) * N;\n"
    "    if constexpr (B % 16 == 0) {\n"
    "#pragma unroll\n"
    "        for (int k = 0; k < B / 16; k++) {\n"
    "            uint4 w = ((const uint4 *)p)[k];\n"
    "            memcpy((char *)d + 16 * k, &w, 16);\n"
    "        }\n"
    "    } else if constexpr (B == 8) {\n"
    "        uint2 w = *(const uint2 *)p;\n"
    "        memcpy(d, &w, 8);\n"
    "    } else if constexpr (B == 4) {\n"
    "        unsigned w = *(const unsigned *)p;\n"
    "        memcpy(d, &w, 4);\n"
    "    } else {\n"
    "#pragma unroll\n"
    "        for (int k = 0; k < N; k++) d[k] = p[k];\n"
    "    }\n"
    "}\n"
    "template <typename T, int N>\n"
    "static __device__ __forceinline__ void bc_vstore(T *p, const T (&s)[N]) "
    "{\n"
    "    constexpr int B = (int)sizeof(T) * N;\n"
    "    if constexpr (B % 16 == 0) {\n"
    "#pragma unroll\n"
    "        for (int k = 0; k < B / 16; k++) {\n"
    "            uint4 w;\n"
    "            memcpy(&w, (const char *)s + 16 * k, 16);\n"
    "            ((uint4 *)p)[k] = w;\n"
    "        }\n"
    "    } else if constexpr (B == 8) {\n"
    "        uint2 w;\n"
    "        memcpy(&w, s, 8);\n"
    "        *(uint2 *)p = w;\n"
    "    } else if constexpr (B == 4) {\n"
    "        unsigned w;\n"
    "        memcpy(&w, s, 4);\n"
    "        *(unsigned *)p = w;\n"
    "    } else {\n"
    "#pragma unroll\n"
    "        for (int k = 0; k < N; k++) p[k] = s[k];\n"
    "    }\n"
    "}\n"
    "\n";

void bc_emit_prelude(bc_buf *b) {
    bc_buf_puts(b, prelude);
}

/* What graph/rng.c's #includes would have declared. */
static const char rng_shim[] =
    "// ---- graph/rng.c (embedded verbatim; its #includes are replaced by\n"
    "// the declarations below) ----\n"
    "typedef unsigned int uint32_t;\n"
    "typedef unsigned long long uint64_t;\n"
    "typedef long long int64_t;\n"
    "typedef int int32_t;\n"
    "#define NAN __longlong_as_double(0x7ff8000000000000LL)\n"
    "#define INFINITY __longlong_as_double(0x7ff0000000000000LL)\n"
    "double bg_det_log(double x);\n"
    "double bg_det_cos2pi(double u);\n"
    "void bg_philox(uint64_t seed, uint64_t counter, uint32_t out[4]);\n"
    "double bg_random_uniform_at(uint64_t seed, int64_t i, double low,\n"
    "                            double high);\n"
    "double bg_random_normal_at(uint64_t seed, int64_t i, double mean,\n"
    "                           double stddev);\n";

#ifdef BRAID_HAVE_RNG_TEXT
extern const char bc_rng_c_text[];
#else
/* Without the embedded text random nodes are refused (bc_gen_source). */
static const char bc_rng_c_text[] = "";
#endif

bool bc_have_rng(void) {
    return bc_rng_c_text[0] != '\0';
}

/* Copies the text line by line, turning #include lines into comments. */
void bc_emit_rng(bc_buf *b) {
    bc_buf_puts(b, rng_shim);
    const char *s = bc_rng_c_text;
    while (*s) {
        const char *e = strchr(s, '\n');
        size_t n = e ? (size_t)(e - s) + 1 : strlen(s);
        const char *t = s;
        while (t < s + n && (*t == ' ' || *t == '\t'))
            t++;
        if (strncmp(t, "#include", 8) == 0) bc_buf_puts(b, "// ");
        char line[512];
        while (n > 0) { /* lines longer than the buffer go in pieces */
            size_t m = n < sizeof line - 1 ? n : sizeof line - 1;
            memcpy(line, s, m);
            line[m] = '\0';
            bc_buf_puts(b, line);
            s += m;
            n -= m;
        }
    }
    bc_buf_puts(b, "\n// ---- end of graph/rng.c ----\n\n"
                   "// one copy of the generators per module: kernels call "
                   "these\nstatic __device__ __noinline__ double "
                   "bc_uniform(bc_u64 seed, long long i,\n"
                   "                                               double "
                   "low, double high) {\n"
                   "    return bg_random_uniform_at(seed, i, low, high);\n}\n"
                   "static __device__ __noinline__ double bc_normal(bc_u64 "
                   "seed, long long i,\n"
                   "                                              double mean, "
                   "double stddev) {\n"
                   "    return bg_random_normal_at(seed, i, mean, stddev);\n"
                   "}\n\n");
}
