/*
 * main.c — the ggufq program: subcommand dispatch, help and --version.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "sigbus.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);   /* NULL: not yet available */
    const char *summary;
    const char *usage;                   /* first line(s) of the help */
    const char *details;                 /* rest of the help, or NULL */
} command;

static const command commands[] = {
    { "info", cmd_info,
      "Show a GGUF file's header, metadata and tensors",
      "usage: ggufq info [--json] FILE",
      "Print the header (version, alignment, data offset, file size, key and\n"
      "tensor counts), one line per metadata key (type and value; long strings\n"
      "and arrays abbreviated) and a table of the tensors with totals.\n"
      "\n"
      "Options:\n"
      "  --json      Print one compact JSON object on a single line instead:\n"
      "              {\"version\", \"alignment\", \"kv_count\", \"tensor_count\",\n"
      "               \"metadata\": {key: value, ...} in file order,\n"
      "               \"tensors\": [{\"name\", \"type\", \"shape\", \"offset\", \"size\"}, ...]}\n"
      "              \"offset\" is relative to the start of the data section.\n"
      "              Arrays are printed in full. Integers are exact (uint64\n"
      "              included); floats use the shortest decimal that reads back\n"
      "              as the same float32/float64 (-0.0 for negative zero); NaN\n"
      "              and infinities are null. Strings are UTF-8 with control\n"
      "              characters escaped; each invalid UTF-8 sequence (maximal\n"
      "              subpart, as Unicode and Python define it) becomes \\ufffd.\n"
      "  -h, --help  Show this help\n" },
    { "dequant", cmd_dequant,
      "Convert every tensor to f32, f16 or bf16",
      "usage: ggufq dequant IN OUT [--to f32|f16|bf16] [--threads N]",
      "Write OUT, a copy of the GGUF file IN with every tensor decoded to F32\n"
      "(bit for bit as ggml's reference kernels) and, for f16 and bf16, encoded\n"
      "again as that type. Tensors already of the target type are copied as they\n"
      "are. Metadata is copied in order; general.file_type is set to llama.cpp's\n"
      "file type (f32: 0, f16: 1, bf16: 32); the alignment is kept. Metadata\n"
      "holding nested arrays (valid GGUF, but refused by ggml) is refused.\n"
      "OUT is written to a temporary file renamed into place at the end: on any\n"
      "failure OUT is left untouched. OUT may not be IN.\n"
      "\n"
      "Options:\n"
      "  --to TYPE      Target type: f32 (default), f16 or bf16\n"
      "  --threads N    Worker threads (default and 0: all cores, or\n"
      "                 OMP_NUM_THREADS when set)\n"
      "  -h, --help     Show this help\n" },
    { "requant", cmd_requant,
      "Requantize a GGUF file exactly as llama.cpp's llama-quantize does",
      "usage: ggufq requant IN TYPE OUT [options]\n"
      "       ggufq requant IN OUT TYPE [NTHREADS] [options]   (llama-quantize's order)",
      "The second form is taken when OUT is no TYPE and the last argument is.\n"
      "Write OUT, IN with every tensor that llama.cpp quantizes converted to\n"
      "TYPE, read as llama-quantize reads it: one of its names, in any case\n"
      "(Q4_K_M, Q5_K_S, Q3_K_M, IQ4_XS, Q2_K_S, Q6_K, Q8_0, F16 ...: llama.cpp's\n"
      "per-tensor mix; Q3_K, Q4_K and Q5_K are Q3_K_M, Q4_K_M and Q5_K_M), a\n"
      "file type number (15 is Q4_K_M, 7 Q8_0, 0 F32), or COPY (every tensor\n"
      "kept as it is, the file rewritten). A ggml type name that is none of\n"
      "these (mxfp4, nvfp4) is a bare type: every such tensor gets it. For one\n"
      "type everywhere use --pure (q4_K --pure: q4_K wherever it fits).\n"
      "Tensor types and bytes are those llama_model_quantize writes; so is the\n"
      "tensor order (sorted by layer, then name; with --keep-split, each shard\n"
      "in its input order). Inputs of any type (F32, F16, BF16, quantized) are\n"
      "decoded and encoded again; tensors that keep their type are copied byte\n"
      "for byte. Metadata is copied, with general.quantization_version = 2 and\n"
      "general.file_type = the recipe's llama.cpp file type (COPY: IN's).\n"
      "Given shard 1 of a split model (name-00001-of-0000N.gguf), every shard\n"
      "is read.\n"
      "OUT is written to a temporary file renamed into place at the end: on any\n"
      "failure, SIGINT or SIGTERM, OUT is left untouched. OUT may not be IN.\n"
      "\n"
      "Options:\n"
      "  --threads N                 Worker threads (default and 0: all cores, or\n"
      "                              OMP_NUM_THREADS when set)\n"
      "  --imatrix FILE              Importance matrix (GGUF or legacy .dat)\n"
      "  --include-weights NAME      Use the imatrix only for tensors whose name\n"
      "                              contains NAME (repeatable)\n"
      "  --exclude-weights NAME      Do not use it for those (repeatable)\n"
      "  --output-tensor-type T      Type of output.weight\n"
      "  --token-embedding-type T    Type of token_embd.weight\n"
      "  --tensor-type REGEX=T       Type of the tensors REGEX matches (repeatable;\n"
      "                              the first match wins)\n"
      "  --tensor-type-file FILE     REGEX=T rules separated by white space, read in\n"
      "                              place among the --tensor-type options ('#' starts\n"
      "                              a comment to the end of the line)\n"
      "  --prune-layers L0,L1,...    Drop these blocks (blk.N.*), renumber the others;\n"
      "                              block_count and per-layer metadata arrays follow\n"
      "  --leave-output-tensor       Keep output.weight as it is\n"
      "  --allow-requantize          Convert tensors that are already quantized\n"
      "                              (decoded first: quality is lost); without it\n"
      "                              such a run is refused, as llama-quantize does\n"
      "  --pure                      No recipe mix: every tensor gets TYPE's default\n"
      "                              type (llama-quantize --pure)\n"
      "  --override-kv KEY=TYPE:VAL  Set a metadata key (TYPE: int, float, bool, str)\n"
      "  --keep-split                Write the same shards as the input\n"
      "  --dry-run                   Print the plan (types, sizes, bits per weight)\n"
      "                              and write nothing; OUT may be omitted. Refuses\n"
      "                              what the run would (same message and status),\n"
      "                              except what only the weights or OUT reveal\n"
      "  --progress bar|json|none    Progress on stderr (default: a bar when stderr\n"
      "                              is a terminal); json: one object per line\n"
      "  -q, --quiet                 No progress, no summary\n"
      "  -h, --help                  Show this help\n" },
    { "bench", cmd_bench,
      "Measure the kernels' speed (and ggml's, side by side)",
      "usage: ggufq bench [--type T[,T...]] [--isa I[,I...]] [--seconds S] [--quantize]\n"
      "                   [--peer DIR | --no-peer] [--no-memset] [--json]\n"
      "       ggufq bench --mt [--fresh] [--type T[,T...]] [--seconds S] [--json]\n"
      "       ggufq bench --requant [--model IN.gguf] [--target T[,T...]] [--threads N]\n"
      "                   [--runs R] [--peer DIR | --no-peer] [--json]",
      "Time dequantization (and with --quantize, quantization) of each type with\n"
      "each ISA's kernels, on one thread, over 65536 weights that stay in the\n"
      "cache: Mweights/s and GB/s of f32 output (of f32 input for quantization),\n"
      "the best of several rounds. When ggml's libggml-base.so is found, its\n"
      "reference kernels are timed too, with the ratio ours/ggml per ISA and\n"
      "the geometric mean of those ratios at the end. memset's bandwidth over\n"
      "256 MiB (one thread and all threads) is printed as the memory limit.\n"
      "\n"
      "Options:\n"
      "  --type T,...   Types to time (default: f16, bf16 and every quantized type)\n"
      "  --isa I,...    ISAs to time: scalar, avx2, avx512, neon (default: all\n"
      "                 this CPU runs)\n"
      "  --seconds S    Time spent on each measurement, split over its rounds\n"
      "                 (default 0.1: about 15 s for every type and ISA)\n"
      "  --quantize     Time quantization too (IQ types take a while)\n"
      "  --peer DIR     Directory of ggml's libggml-base.so (default:\n"
      "                 $GGUFQ_PEER_DIR, else peer/package/bins/linux-x64 next\n"
      "                 to the ggufq program, where 'make test' puts it)\n"
      "  --no-peer      Do not time ggml\n"
      "  --no-memset    Do not measure memset's bandwidth\n"
      "  --json         Print one JSON object instead of tables:\n"
      "                 {\"weights\", \"seconds\", \"best_of\", \"cpu\", \"selected\",\n"
      "                  \"peer\", \"memset\": [{\"threads\", \"bytes\", \"gb_per_s\"}, ...],\n"
      "                  \"dequantize\"/\"quantize\": [{\"type\", \"impl\" (an ISA or\n"
      "                  \"ggml\"), \"mweights_per_s\", \"gb_per_s\", \"vs_ggml\"}, ...],\n"
      "                  \"geomean_vs_ggml\": {\"dequantize\": {isa: ratio}, ...}}\n"
      "  -h, --help     Show this help\n"
      "\n"
      "With --mt: ggufq_dequantize_mt of 64 Mi weights (256 MiB of f32 output,\n"
      "far out of the cache) with one thread and with all threads, each next to\n"
      "memset's bandwidth over the same buffer (their passes alternate). With\n"
      "--fresh every pass writes into a newly allocated, never-touched buffer,\n"
      "as a caller that allocates its output array does, and memset is timed\n"
      "on a fresh buffer too: both then pay for the page faults.\n"
      "\n"
      "With --requant: requantize a model end to end with ggufq_requant and with\n"
      "llama.cpp's llama_model_quantize (the peer's libllama), each run in a\n"
      "fresh process: best wall time of R runs (default 3), peak resident\n"
      "memory, and whether the two outputs have the same tensor bytes and are\n"
      "the same file. Without --model, a synthetic 58 M-weight F16 llama is\n"
      "written to $TMPDIR first. --target defaults to Q8_0,Q4_K_M; --threads\n"
      "to all cores (both sides get the same count).\n"
      "\n"
      "The numbers vary from run to run by a few percent; compare ratios.\n"
      "The google/benchmark suite build/bench/ggufq-bench also times data\n"
      "coming from memory.\n" },
    { "cpu", cmd_cpu,
      "Show the CPU's features and which kernels run",
      "usage: ggufq cpu [--json]",
      "Print the CPU features the library detected, each instruction set with\n"
      "whether this CPU and OS can run its kernels, and the line\n"
      "'selected: ISA' naming the kernels in use.\n"
      "\n"
      "GGUFQ_ISA=scalar|avx2|avx512|neon in the environment forces one ISA for\n"
      "every command; if the CPU cannot run it, every command fails (exit 1).\n"
      "\n"
      "Options:\n"
      "  --json      {\"features\": [...], \"isa\": {name: true|false, ...},\n"
      "               \"selected\": name}\n"
      "  -h, --help  Show this help\n" },
};

#define N_COMMANDS (sizeof commands / sizeof commands[0])

static const command *find_command(const char *name)
{
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

static const char program_usage[] = "usage: ggufq COMMAND [ARGS...]\n";

static void print_program_help(void)
{
    out_puts(program_usage);
    out_puts("\nInspect and convert GGUF files (ggml / llama.cpp).\n\nCommands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++) {
        if (commands[i].run) {
            out_printf("  %-9s %s\n", commands[i].name, commands[i].summary);
        }
    }
    out_printf("  %-9s %s\n", "help", "Show the help of a command");
    bool missing = false;
    for (size_t i = 0; i < N_COMMANDS; i++) {
        if (!commands[i].run) {
            out_printf("%s %s", missing ? "" : "\nNot yet available:", commands[i].name);
            missing = true;
        }
    }
    out_puts(missing ? "\n\nOptions:\n" : "\nOptions:\n");
    out_puts("  --version   Print the version and exit\n"
             "  -h, --help  Show this help\n"
             "\nRun 'ggufq help COMMAND' or 'ggufq COMMAND --help' for a command's options.\n"
             "Exit status: 0 success, 1 invalid input or failure, 2 usage error,\n"
             "130 or 143 after SIGINT or SIGTERM (clean-up done).\n");
}

int cli_help(const char *name)
{
    if (!name) {
        print_program_help();
        return CLI_EXIT_OK;
    }
    const command *c = find_command(name);
    if (!c)
        return CLI_EXIT_USAGE;
    out_printf("%s\n\n%s\n", c->usage, c->summary);
    if (c->details)
        out_printf("\n%s", c->details);
    return CLI_EXIT_OK;
}

int cli_usage_error(const char *name, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const command *c = name ? find_command(name) : NULL;
    if (c) {
        fprintf(stderr, "ggufq %s: %s\n%s\nRun 'ggufq help %s' for more.\n", name, msg, c->usage, name);
    } else {
        fprintf(stderr, "ggufq: %s\n%sRun 'ggufq help' for the list of commands.\n", msg, program_usage);
    }
    return CLI_EXIT_USAGE;
}

bool cli_is_help_option(const char *arg)
{
    return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

static int run_help(int argc, char **argv)
{
    if (argc == 1)
        return cli_help(NULL);
    if (argc > 2)
        return cli_usage_error(NULL, "help takes at most one command name");
    if (!find_command(argv[1]) && strcmp(argv[1], "help") != 0)
        return cli_usage_error(NULL, "unknown command '%s'", argv[1]);
    return cli_help(strcmp(argv[1], "help") == 0 ? NULL : argv[1]);
}

static int dispatch(int argc, char **argv)
{
    if (argc < 2)
        return cli_usage_error(NULL, "no command given");
    const char *name = argv[1];
    if (strcmp(name, "--version") == 0) {
        if (argc > 2)
            return cli_usage_error(NULL, "--version takes no arguments");
        out_printf("ggufq %s\n", ggufq_version());
        return CLI_EXIT_OK;
    }
    if (cli_is_help_option(name) || strcmp(name, "help") == 0)
        return run_help(argc - 1, argv + 1);
    const command *c = find_command(name);
    if (!c) {
        if (name[0] == '-')
            return cli_usage_error(NULL, "unknown option '%s'", name);
        return cli_usage_error(NULL, "unknown command '%s'", name);
    }
    if (!c->run) {
        cli_error("%s: not yet available in this version", name);
        return CLI_EXIT_FAIL;
    }
    int rc = cli_check_isa_env();
    if (rc != CLI_EXIT_OK)
        return rc;
    return c->run(argc - 1, argv + 1);
}

int main(int argc, char **argv)
{
    out_init();
    cli_sigbus_install();   /* an input truncated while mapped: an error, not a crash */
    int status = dispatch(argc, argv);
    return out_finish(status);
}
