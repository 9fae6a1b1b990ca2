/*
 * cmd_bench.c — `ggufq bench`: its options, the command and its help. The
 * runs are in bench_kernels.c (the default), bench_mt.c (--mt) and
 * bench_requant.c (--requant); bench.h says what they share.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* strtok_r: POSIX beyond C11 */
#endif

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define DEFAULT_SECONDS  0.1
#define MAX_SECONDS      60.0

static const ggufq_isa all_isas[] = {
    GGUFQ_ISA_SCALAR, GGUFQ_ISA_AVX2, GGUFQ_ISA_AVX512, GGUFQ_ISA_NEON
};
_Static_assert(sizeof all_isas / sizeof all_isas[0] == N_ISAS, "N_ISAS counts the ISAs");

/* ------------------------------------------------------------------------- */
/* Options                                                                   */
/* ------------------------------------------------------------------------- */

/* --type T,T...: append each type once; a usage error for an unknown name. */
static int parse_types(bench_opts *o, const char *list)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", list);
    o->types_given = true;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int t = ggufq_type_from_name(tok);
        if (t < 0)
            return cli_usage_error("bench", "unknown type '%s'", tok);
        bool dup = false;
        for (int i = 0; i < o->n_types; i++)
            dup = dup || o->types[i] == (ggufq_type)t;
        if (!dup && o->n_types < GGUFQ_TYPE_COUNT)
            o->types[o->n_types++] = (ggufq_type)t;
    }
    if (o->n_types == 0)
        return cli_usage_error("bench", "--type needs at least one type");
    return CLI_EXIT_OK;
}

/* --isa I,I...: each must be one this CPU runs (else exit 1, not a usage error). */
static int parse_isas(bench_opts *o, const char *list)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int isa = cli_parse_isa(tok);
        if (isa < 0)
            return cli_usage_error("bench", "unknown ISA '%s' (scalar, avx2, avx512, neon)", tok);
        if (!ggufq_isa_supported((ggufq_isa)isa)) {
            cli_error("bench: --isa %s: this CPU/OS cannot run it", tok);
            return CLI_EXIT_FAIL;
        }
        bool dup = false;
        for (int i = 0; i < o->n_isas; i++)
            dup = dup || o->isas[i] == (ggufq_isa)isa;
        if (!dup && o->n_isas < N_ISAS)
            o->isas[o->n_isas++] = (ggufq_isa)isa;
    }
    if (o->n_isas == 0)
        return cli_usage_error("bench", "--isa needs at least one ISA");
    return CLI_EXIT_OK;
}

/* --out O,O...: f32, f16, bf16, each once, in the order given. */
static int parse_outs(bench_opts *o, const char *list)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int out = 0;
        while (out < N_OUTS && strcmp(tok, bench_out_name((bench_out)out)) != 0)
            out++;
        if (out == N_OUTS)
            return cli_usage_error("bench", "--out: unknown output '%s' (f32, f16, bf16)", tok);
        bool dup = false;
        for (int i = 0; i < o->n_outs; i++)
            dup = dup || o->outs[i] == (bench_out)out;
        if (!dup)
            o->outs[o->n_outs++] = (bench_out)out;
    }
    if (o->n_outs == 0)
        return cli_usage_error("bench", "--out needs at least one of f32, f16, bf16");
    return CLI_EXIT_OK;
}

/* --mt without --type: the common types, small to large blocks. */
static const ggufq_type mt_default_types[] = {
    GGUFQ_TYPE_Q4_0, GGUFQ_TYPE_Q8_0, GGUFQ_TYPE_Q4_K, GGUFQ_TYPE_F16
};

static void default_lists(bench_opts *o)
{
    if (o->n_types == 0 && o->mt)
        for (size_t i = 0; i < sizeof mt_default_types / sizeof mt_default_types[0]; i++)
            o->types[o->n_types++] = mt_default_types[i];
    if (o->n_types == 0)
        for (int t = 0; t < GGUFQ_TYPE_COUNT; t++)
            if (ggufq_type_is_valid(t) &&
                (ggufq_type_is_quantized((ggufq_type)t) || t == GGUFQ_TYPE_F16 || t == GGUFQ_TYPE_BF16))
                o->types[o->n_types++] = (ggufq_type)t;
    if (o->n_outs == 0)
        o->outs[o->n_outs++] = OUT_F32;
    if (o->n_isas == 0)
        for (int i = 0; i < N_ISAS; i++)
            if (ggufq_isa_supported(all_isas[i]))
                o->isas[o->n_isas++] = all_isas[i];
}

/* Returns CLI_EXIT_OK, another exit status, or -1 when the help was printed. */
static int parse_args(int argc, char **argv, bench_opts *o)
{
    memset(o, 0, sizeof *o);
    o->seconds = DEFAULT_SECONDS;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help_option(a)) {
            cli_help("bench");
            return -1;
        }
        if (strcmp(a, "--json") == 0) { o->json = true; continue; }
        if (strcmp(a, "--quantize") == 0) { o->quantize = true; continue; }
        if (strcmp(a, "--imatrix") == 0) { o->quantize = o->imatrix = true; continue; }
        if (strcmp(a, "--no-peer") == 0) { o->no_peer = true; continue; }
        if (strcmp(a, "--no-memset") == 0) { o->no_memset = true; continue; }
        if (strcmp(a, "--mt") == 0) { o->mt = true; continue; }
        if (strcmp(a, "--fresh") == 0) { o->fresh = true; continue; }
        /* Options with a value: "--opt VALUE" or "--opt=VALUE". */
        char name[16];
        const char *val = NULL, *opt = a;
        const char *eq = strchr(a, '=');
        if (eq && (size_t)(eq - a) < sizeof name) {
            memcpy(name, a, (size_t)(eq - a));
            name[eq - a] = '\0';
            opt = name;
            val = eq + 1;
        }
        if (strcmp(opt, "--type") != 0 && strcmp(opt, "--isa") != 0 &&
            strcmp(opt, "--seconds") != 0 && strcmp(opt, "--peer") != 0 && strcmp(opt, "--out") != 0) {
            if (a[0] == '-')
                return cli_usage_error("bench", "unknown option '%s'", a);
            return cli_usage_error("bench", "unexpected argument '%s'", a);
        }
        if (!val) {
            if (i + 1 >= argc)
                return cli_usage_error("bench", "option '%s' needs a value", opt);
            val = argv[++i];
        }
        int rc = CLI_EXIT_OK;
        if (strcmp(opt, "--type") == 0) {
            rc = parse_types(o, val);
        } else if (strcmp(opt, "--isa") == 0) {
            rc = parse_isas(o, val);
        } else if (strcmp(opt, "--out") == 0) {
            rc = parse_outs(o, val);
        } else if (strcmp(opt, "--peer") == 0) {
            o->peer_dir = val;
        } else {
            char *end = NULL;
            errno = 0;
            double s = strtod(val, &end);
            if (errno || end == val || *end != '\0' || !(s > 0) || s > MAX_SECONDS)
                return cli_usage_error("bench", "--seconds needs a number of seconds in (0, %g], not '%s'",
                                       MAX_SECONDS, val);
            o->seconds = s;
        }
        if (rc != CLI_EXIT_OK)
            return rc;
    }
    if (o->fresh && !o->mt)
        return cli_usage_error("bench", "--fresh goes with --mt");
    if (o->imatrix && o->mt)
        return cli_usage_error("bench", "--imatrix does not go with --mt");
    default_lists(o);
    return CLI_EXIT_OK;
}

/* ------------------------------------------------------------------------- */
/* Command                                                                   */
/* ------------------------------------------------------------------------- */

int cmd_bench(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--requant") == 0)
            return bench_requant(argc, argv);
    bench_opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc < 0)
        return CLI_EXIT_OK;   /* help printed */
    if (rc != CLI_EXIT_OK)
        return rc;
    return o.mt ? bench_mt(&o) : bench_kernels(&o);
}

const cli_command cmd_bench_command = {
    .name = "bench",
    .summary = "Measure the kernels' speed (and ggml's, side by side)",
    .usage = "usage: ggufq bench [--type T[,T...]] [--isa I[,I...]] [--out O[,O...]] [--seconds S]\n"
             "                   [--quantize [--imatrix]] [--peer DIR | --no-peer] [--no-memset]\n"
             "                   [--json]\n"
             "       ggufq bench --mt [--fresh] [--type T[,T...]] [--out O[,O...]] [--seconds S]\n"
             "                   [--no-memset] [--json]\n"
             "       ggufq bench --requant [--model IN.gguf] [--target T[,T...]] [--threads N]\n"
             "                   [--runs R] [--peer DIR | --no-peer] [--json]",
    .help =
      "Time dequantization (and with --quantize, quantization) of each type with\n"
      "each ISA's kernels, on one thread, over 65536 weights that stay in the\n"
      "cache: Mweights/s and GB/s of f32 output (of f32 input for quantization),\n"
      "the best of several rounds. When ggml's libggml-base.so is found, its\n"
      "reference kernels are timed too, with the ratio ours/ggml per ISA and\n"
      "the geometric mean of those ratios at the end. memset's bandwidth over\n"
      "256 MiB (one thread and all threads) is printed as the memory limit, and\n"
      "over one call's output in the cache as the ceiling for dequantization:\n"
      "the %memset columns give each type's speed as a percentage of it.\n"
      "The bound column is the speed of a kernel with the type's byte shape\n"
      "and no decoding (it reads the type's input bytes per weight, every\n"
      "cache line of them, and stores as many output bytes, with the widest\n"
      "ISA here): what the memory system allows that type; %bound gives each\n"
      "type's speed as a percentage of it. With --out f16 or bf16,\n"
      "ggufq_dequantize_to into that output is timed too, one table per\n"
      "output, against memset and the bound of its bytes, and 'x f32' is its\n"
      "weight rate over the f32 output's (half the bytes: the goal is 1.7x).\n"
      "Every report starts with where it comes from, as 'ggufq cpu' prints it:\n"
      "the CPU model and CPUs, the ggufq version, git commit, build type and\n"
      "compiler, and the ISA in use (in JSON: \"provenance\").\n"
      "\n"
      "Options:\n"
      "  --type T,...   Types to time (default: f16, bf16 and every quantized type;\n"
      "                 with --mt: q4_0, q8_0, q4_K and f16)\n"
      "  --isa I,...    ISAs to time: scalar, avx2, avx512, neon (default: all\n"
      "                 this CPU runs)\n"
      "  --out O,...    Outputs of dequantization to time: f32, f16, bf16\n"
      "                 (default: f32); one table each\n"
      "  --seconds S    Time spent on each measurement, split over its rounds\n"
      "                 (default 0.1: about 20 s for every type and ISA)\n"
      "  --quantize     Time quantization too (IQ types take a while)\n"
      "  --imatrix      Time quantization with an importance matrix instead (implies\n"
      "                 --quantize), ours and ggml's, for the types whose quantizer\n"
      "                 uses one (their output differs from the one without); the\n"
      "                 others are listed as not timed. The matrix is synthetic and\n"
      "                 the same every run: column i weighs\n"
      "                 1 + (i * 2654435761 mod 1000) / 250, in [1, 5)\n"
      "  --peer DIR     Directory of ggml's libggml-base.so (default:\n"
      "                 $GGUFQ_PEER_DIR, else peer/package/bins/linux-x64 next\n"
      "                 to the ggufq program, where 'make test' puts it)\n"
      "  --no-peer      Do not time ggml\n"
      "  --no-memset    Do not measure memset's bandwidth\n"
      "  --json         Print one JSON object instead of tables:\n"
      "                 {\"weights\", \"seconds\", \"best_of\", \"cpu\", \"selected\",\n"
      "                  \"peer\", \"outs\", \"memset\": [{\"threads\", \"bytes\", \"gb_per_s\"},\n"
      "                  ...], \"bound_isa\", \"bound\": [{\"type\", \"out\",\n"
      "                  \"mweights_per_s\", \"gb_per_s\"}, ...],\n"
      "                  \"dequantize\"/\"quantize\": [{\"type\", \"impl\" (an ISA or\n"
      "                  \"ggml\"), \"out\", \"mweights_per_s\", \"gb_per_s\", \"vs_ggml\",\n"
      "                  \"percent_of_memset\", \"percent_of_bound\", \"vs_f32\"}, ...],\n"
      "                  \"geomean_vs_ggml\": {\"dequantize\": {isa: ratio}, ...},\n"
      "                  \"quantize_imatrix\" (with --quantize: true if --imatrix),\n"
      "                  \"quantize_no_imatrix_path\" (with --imatrix: types not timed),\n"
      "                  \"provenance\": {...}}\n"
      "  --mt           Time ggufq_dequantize_mt out of the cache instead (below)\n"
      "  --fresh        With --mt: a newly allocated output buffer every pass\n"
      "  --requant      Time requantization against llama.cpp instead (below)\n"
      "  -h, --help     Show this help\n"
      "\n"
      "With --mt: ggufq_dequantize_mt of 64 Mi weights (256 MiB of f32 output,\n"
      "far out of the cache) with one thread and with all threads, each next to\n"
      "memset's bandwidth over the same buffer (their passes alternate). With\n"
      "--out f16 or bf16, ggufq_dequantize_to into 128 MiB of that output too,\n"
      "next to memset of 128 MiB (one table per output). With\n"
      "--fresh every pass writes into a newly allocated, never-touched buffer,\n"
      "as a caller that allocates its output array does, and memset is timed\n"
      "on a fresh buffer too: both then pay for the page faults. --seconds is\n"
      "then the least time spent on each type.\n"
      "\n"
      "With --requant: requantize a model end to end with ggufq_requant and with\n"
      "llama.cpp's llama_model_quantize (the peer's libllama), each run in a\n"
      "fresh process: best wall time of R runs, peak resident memory, and\n"
      "whether the two outputs have the same tensor bytes and are the same file.\n"
      "Beside them the floor: reading the whole input from the page cache\n"
      "(read() into a 1 MiB buffer, best of R after a warm-up read), with\n"
      "each target's ggufq time over it (ggufq/read).\n"
      "  --model IN.gguf   The model (default: a synthetic 58 M-weight F16 llama,\n"
      "                    written to $TMPDIR first)\n"
      "  --target T,...    Targets, as 'ggufq requant' reads TYPE (default\n"
      "                    Q8_0,Q4_K_M; at most 8)\n"
      "  --threads N       Threads of both sides (default and 0: all cores)\n"
      "  --runs R          Runs of each side, 1 to 20 (default 3)\n"
      "  --peer, --no-peer and --json as above.\n"
      "\n"
      "The numbers vary from run to run by a few percent; compare ratios.\n"
      "The google/benchmark suite build/bench/ggufq-bench also times data\n"
      "coming from memory.\n"
      "\n"
      "Examples:\n"
      "  ggufq bench --type q4_K,q8_0 --isa scalar,avx2\n"
      "  ggufq bench --quantize --imatrix --type iq4_xs,q4_K --json > bench.json\n"
      "  ggufq bench --mt --fresh --type q4_0\n"
      "  ggufq bench --requant --model model-f16.gguf --target Q4_K_M --runs 1\n",
    .run = cmd_bench,
};
