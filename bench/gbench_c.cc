// gbench_c.cc — the C++ side of gbench_c.h: google/benchmark behind C functions.
#include "gbench_c.h"

#include <benchmark/benchmark.h>

// What a C benchmark sees: the library's state and the rates it asked for.
struct gq_bench_state {
    benchmark::State &st;
    int64_t items_per_iteration = 0;
    int64_t bytes_per_iteration = 0;
    bool skipped = false;
};

extern "C" void gq_bench_register(const char *name, gq_bench_fn fn, void *arg)
{
    benchmark::RegisterBenchmark(name, [fn, arg](benchmark::State &st) {
        gq_bench_state s{st};
        fn(&s, arg);
        // A benchmark that skipped before the loop must not leave the loop unfinished.
        if (!s.skipped && st.iterations() > 0) {
            if (s.items_per_iteration > 0)
                st.SetItemsProcessed(st.iterations() * s.items_per_iteration);
            if (s.bytes_per_iteration > 0)
                st.SetBytesProcessed(st.iterations() * s.bytes_per_iteration);
        }
    });
}

extern "C" bool gq_bench_keep_running(gq_bench_state *s)
{
    return s->st.KeepRunning();
}

extern "C" int64_t gq_bench_iterations(const gq_bench_state *s)
{
    return static_cast<int64_t>(s->st.iterations());
}

extern "C" void gq_bench_set_items(gq_bench_state *s, int64_t items_per_iteration)
{
    s->items_per_iteration = items_per_iteration;
}

extern "C" void gq_bench_set_bytes(gq_bench_state *s, int64_t bytes_per_iteration)
{
    s->bytes_per_iteration = bytes_per_iteration;
}

extern "C" void gq_bench_set_label(gq_bench_state *s, const char *label)
{
    s->st.SetLabel(label);
}

extern "C" void gq_bench_pause(gq_bench_state *s)
{
    s->st.PauseTiming();
}

extern "C" void gq_bench_resume(gq_bench_state *s)
{
    s->st.ResumeTiming();
}

extern "C" void gq_bench_skip(gq_bench_state *s, const char *msg)
{
    s->skipped = true;
    s->st.SkipWithError(msg);
}

extern "C" int gq_bench_main(int argc, char **argv)
{
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv))
        return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
