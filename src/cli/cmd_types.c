/*
 * cmd_types.c — `ggufq types [--json]`: every ggml tensor type (id, block
 * geometry, bits per weight, whether ggufq quantizes it and whether that
 * needs an importance matrix) and every TYPE name llama-quantize lists
 * (llama.cpp's file types: number, aliases, the bits per weight it states,
 * whether it needs an importance matrix). All from the public API.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "json.h"

/* Bits per weight of a type: exact (block sizes are powers of two), printed with %g. */
static double type_bpw(ggufq_type t)
{
    return (double)ggufq_type_block_bytes(t) * 8.0 / (double)ggufq_type_block_size(t);
}

static void print_types_text(void)
{
    out_puts("ggml tensor types (bpw: bits per weight; imatrix: quantizing needs an importance matrix)\n");
    out_printf("%-8s %3s %6s %6s %8s  %-8s %s\n", "type", "id", "block", "bytes", "bpw", "imatrix", "quantize");
    for (int id = 0; id < GGUFQ_TYPE_COUNT; id++) {
        if (!ggufq_type_is_valid(id))
            continue;
        const ggufq_type t = (ggufq_type)id;
        out_printf("%-8s %3d %6lld %6zu %8g  %-8s %s\n", ggufq_type_name(t), id,
                   (long long)ggufq_type_block_size(t), ggufq_type_block_bytes(t), type_bpw(t),
                   ggufq_type_needs_imatrix(t) ? "yes" : "no", ggufq_type_can_quantize(t) ? "yes" : "no");
    }
}

static void print_recipes_text(void)
{
    out_puts("\nllama.cpp file types: the TYPE of 'ggufq requant' and llama-quantize, by name (any case)\n"
             "or number (bpw: as llama-quantize states it; imatrix: refused without one)\n");
    out_printf("%-9s %5s  %-7s %-8s %6s  %-7s %s\n", "name", "ftype", "type", "alias of", "bpw", "imatrix",
               "llama-quantize says");
    const int64_t n = ggufq_recipe_count();
    for (int64_t i = 0; i < n; i++) {
        ggufq_recipe_info r;
        if (ggufq_recipe_at(i, &r) != GGUFQ_OK)
            continue;
        char bpw[32] = "-";
        if (r.bpw > 0)
            snprintf(bpw, sizeof bpw, "%g", r.bpw);
        out_printf("%-9s %5u  %-7s %-8s %6s  %-7s %s\n", r.name, (unsigned)r.file_type,
                   r.copy ? "(kept)" : ggufq_type_name(r.default_type), r.alias_of ? r.alias_of : "-", bpw,
                   r.needs_imatrix ? "yes" : "no", r.description);
    }
}

static void json_key_string(const char *key, const char *value)
{
    out_printf(",\"%s\":", key);
    if (value)
        json_write_string(value, strlen(value));
    else
        out_puts("null");
}

/* {"types":[{"name","id","block_size","block_bytes","bpw","needs_imatrix","can_quantize"},...],
 *  "recipes":[{"name","file_type","default_type","alias_of","copy","bpw","needs_imatrix",
 *              "description"},...]} */
static void print_json(void)
{
    out_puts("{\"types\":[");
    bool first = true;
    for (int id = 0; id < GGUFQ_TYPE_COUNT; id++) {
        if (!ggufq_type_is_valid(id))
            continue;
        const ggufq_type t = (ggufq_type)id;
        out_puts(first ? "{\"name\":" : ",{\"name\":");
        json_write_string(ggufq_type_name(t), strlen(ggufq_type_name(t)));
        out_printf(",\"id\":%d,\"block_size\":%lld,\"block_bytes\":%zu,\"bpw\":%g,\"needs_imatrix\":%s,"
                   "\"can_quantize\":%s}", id, (long long)ggufq_type_block_size(t), ggufq_type_block_bytes(t),
                   type_bpw(t), ggufq_type_needs_imatrix(t) ? "true" : "false",
                   ggufq_type_can_quantize(t) ? "true" : "false");
        first = false;
    }
    out_puts("],\"recipes\":[");
    const int64_t n = ggufq_recipe_count();
    for (int64_t i = 0; i < n; i++) {
        ggufq_recipe_info r;
        if (ggufq_recipe_at(i, &r) != GGUFQ_OK)
            continue;
        out_puts(i ? ",{\"name\":" : "{\"name\":");
        json_write_string(r.name, strlen(r.name));
        out_printf(",\"file_type\":%u", (unsigned)r.file_type);
        json_key_string("default_type", r.copy ? NULL : ggufq_type_name(r.default_type));
        json_key_string("alias_of", r.alias_of);
        out_printf(",\"copy\":%s,\"bpw\":", r.copy ? "true" : "false");
        if (r.bpw > 0)
            out_printf("%g", r.bpw);
        else
            out_puts("null");
        out_printf(",\"needs_imatrix\":%s", r.needs_imatrix ? "true" : "false");
        json_key_string("description", r.description);
        out_putc('}');
    }
    out_puts("]}\n");
}

int cmd_types(int argc, char **argv)
{
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            json = true;
        else if (cli_is_help_option(argv[i]))
            return cli_help("types");
        else if (argv[i][0] == '-')
            return cli_usage_error("types", "unknown option '%s'", argv[i]);
        else
            return cli_usage_error("types", "unexpected argument '%s'", argv[i]);
    }
    if (json) {
        print_json();
    } else {
        print_types_text();
        print_recipes_text();
    }
    return CLI_EXIT_OK;
}

const cli_command cmd_types_command = {
    .name = "types",
    .summary = "List the ggml tensor types and llama.cpp's file types (Q4_K_M ...)",
    .usage = "usage: ggufq types [--json]",
    .help =
      "First every ggml tensor type: its name and id, weights per block, bytes\n"
      "per block, bits per weight, whether quantizing to it needs an importance\n"
      "matrix (--imatrix), and whether ggufq can quantize to it (every type can\n"
      "be read; 'ggufq dequant' decodes them all).\n"
      "Then every TYPE name llama-quantize lists, in its order, as 'ggufq\n"
      "requant' reads them: the name, llama.cpp's file type number\n"
      "(general.file_type; the number may be given instead of the name), the\n"
      "type most tensors get, the recipe an alias names (Q4_K is Q4_K_M), the\n"
      "bits per weight llama-quantize states (its other entries state a size\n"
      "and a perplexity on a reference model, shown as it prints them), and\n"
      "whether llama.cpp refuses it without an importance matrix.\n"
      "\n"
      "Options:\n"
      "  --json      {\"types\": [{\"name\", \"id\", \"block_size\", \"block_bytes\",\n"
      "               \"bpw\", \"needs_imatrix\", \"can_quantize\"}, ...],\n"
      "               \"recipes\": [{\"name\", \"file_type\", \"default_type\",\n"
      "               \"alias_of\", \"copy\", \"bpw\" (null: not stated),\n"
      "               \"needs_imatrix\", \"description\"}, ...]}\n"
      "  -h, --help  Show this help\n"
      "\n"
      "Examples:\n"
      "  ggufq types\n"
      "  ggufq types | grep -i q4_k\n"
      "  ggufq types --json | jq -r '.recipes[] | select(.needs_imatrix) | .name'\n",
    .run = cmd_types,
};
