# Makefile: build, test, and the main job.
#
#   make            build ./train and the test programs
#   make run        train the default tiny model on the embedded corpus, then sample
#   make test       every test program; stops at the first failure
#   make asan       the tests again under AddressSanitizer + UndefinedBehaviorSanitizer
#   make fixtures   regenerate the PyTorch reference fixtures (needs python3-torch)
#   make kjv        data/kjv.txt, the King James Bible as text (needs apt-get install bible-kjv)
#
# Flags: -O3 without -ffast-math/-Ofast. -Ofast lets the compiler assume no NaN/Inf and reorder
# sums, which broke llm.c's GELU; we keep IEEE semantics and get vectorised reductions from
# `#pragma omp simd reduction` instead. -ffp-contract=fast allows fused multiply-add (gnu11
# allows it by default; spelled out because -std=c11 would turn it off). -march=native picks
# AVX2/AVX-512 on the machine that builds; override with `make ARCH=` for a portable binary.
CC ?= gcc
ARCH ?= -march=native
WARN = -Wall -Wextra -Wshadow -Wstrict-prototypes
CFLAGS ?= -std=gnu11 -O3 $(ARCH) -ffp-contract=fast -fopenmp $(WARN)
CPPFLAGS += -I.
# make BLAS=openblas: the model's matrix products through OpenBLAS (Debian's libopenblas-dev).
# OpenBLAS picks its kernel from the CPU; the OPENBLAS_CORETYPE variable overrides that choice.
ifeq ($(BLAS),openblas)
CPPFLAGS += -DUSE_OPENBLAS -I/usr/include/x86_64-linux-gnu
LDLIBS_BLAS = -lopenblas
endif
LDLIBS = -lm $(LDLIBS_BLAS)
PYTHON ?= /usr/bin/python3

CORE = model.c posenc.c kernels.c
LIB = $(CORE) checkpoint.c viz.c eval.c perplexity.c safetensors.c dataset/data.c dataset/corpus.c dataset/loader.c dataset/tasks.c
HDR = common.h kernels.h model.h posenc.h viz.h checkpoint.h eval.h perplexity.h safetensors.h dataset/data.h dataset/loader.h dataset/tasks.h
TESTS = tests/test_grad tests/test_posenc tests/test_positions tests/test_viz tests/test_kernels tests/test_data tests/test_tasks tests/test_safetensors tests/test_train tests/st_compare tests/test_ppl

.PHONY: all test run asan clean fixtures bench kjv
all: train compare $(TESTS)

train: train.c $(LIB) $(HDR)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ train.c $(LIB) $(LDLIBS)

compare: compare.c common.h
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ compare.c $(LDLIBS)

# the gradient checks run in double precision: finite differences are then exact to ~1e-10
tests/test_grad: tests/test_grad.c $(CORE) $(HDR) tests/testutil.h
	$(CC) $(CPPFLAGS) $(CFLAGS) -DREAL=double -o $@ tests/test_grad.c $(CORE) $(LDLIBS)
tests/test_posenc: tests/test_posenc.c $(CORE) $(HDR) tests/testutil.h
	$(CC) $(CPPFLAGS) $(CFLAGS) -DREAL=double -o $@ tests/test_posenc.c $(CORE) $(LDLIBS)
tests/test_positions: tests/test_positions.c $(CORE) $(HDR) tests/testutil.h
	$(CC) $(CPPFLAGS) $(CFLAGS) -DREAL=double -o $@ tests/test_positions.c $(CORE) $(LDLIBS)
tests/test_viz: tests/test_viz.c viz.c $(CORE) $(HDR) tests/testutil.h
	$(CC) $(CPPFLAGS) $(CFLAGS) -DREAL=double -o $@ tests/test_viz.c viz.c $(CORE) $(LDLIBS)
tests/test_kernels: tests/test_kernels.c $(CORE) $(HDR) tests/testutil.h
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ tests/test_kernels.c $(CORE) $(LDLIBS)
tests/test_train: tests/test_train.c $(LIB) $(HDR) tests/testutil.h
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ tests/test_train.c $(LIB) $(LDLIBS)
tests/test_data: tests/test_data.c dataset/data.c dataset/corpus.c $(HDR) tests/testutil.h
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ tests/test_data.c dataset/data.c dataset/corpus.c $(LDLIBS)
tests/test_tasks: tests/test_tasks.c dataset/tasks.c dataset/data.c dataset/corpus.c $(CORE) $(HDR) tests/testutil.h
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ tests/test_tasks.c dataset/tasks.c dataset/data.c dataset/corpus.c $(CORE) $(LDLIBS)
tests/test_safetensors: tests/test_safetensors.c safetensors.c $(HDR) tests/testutil.h
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ tests/test_safetensors.c safetensors.c $(LDLIBS)
# per-token losses compared with direct forwards: double build
tests/test_ppl: tests/test_ppl.c perplexity.c $(CORE) $(HDR) tests/testutil.h
	$(CC) $(CPPFLAGS) $(CFLAGS) -DREAL=double -o $@ tests/test_ppl.c perplexity.c $(CORE) $(LDLIBS)
tests/st_compare: tests/st_compare.c safetensors.c safetensors.h
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ tests/st_compare.c safetensors.c $(LDLIBS)

# Two threads make the tests exercise the OpenMP paths on any machine.
test: all
	OMP_NUM_THREADS=2 ./tests/test_grad
	OMP_NUM_THREADS=2 ./tests/test_posenc
	OMP_NUM_THREADS=2 ./tests/test_positions
	OMP_NUM_THREADS=2 ./tests/test_viz
	OMP_NUM_THREADS=2 ./tests/test_kernels
	./tests/test_data
	./tests/test_tasks
	./tests/test_safetensors
	OMP_NUM_THREADS=2 ./tests/test_train
	OMP_NUM_THREADS=2 ./tests/test_ppl
	./tests/test_cli.sh
	./tests/test_resume.sh
	./tests/test_torch.sh
	./tests/test_rules.sh
	@echo "make test: all test programs passed"

# the loss curve needs gnuplot (apt-get install gnuplot-nox); without it run.csv is still written
run: train
	./train --steps 1000 --log run.csv --save run.ckpt --sample 400 --prompt "Once upon a time" --temperature 0.8 --top-k 20 --log-every 50
	@if command -v gnuplot > /dev/null; then gnuplot -e "csv='run.csv'; out='run.png'" plot/loss.gp && echo "loss curve: run.png (data: run.csv)"; \
	 else echo "loss log: run.csv (apt-get install gnuplot-nox to get the plot run.png)"; fi

asan:
	$(MAKE) clean
	$(MAKE) test CFLAGS="-std=gnu11 -O1 -g -fopenmp $(WARN) -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
	$(MAKE) clean

# make bench: builds ./bench (with OpenBLAS for the sgemm reference when libopenblas-dev is
# installed) and runs it: peak, every config, scheme overheads, attention as T doubles; bench.csv.
HAVE_OPENBLAS := $(shell test -f /usr/include/x86_64-linux-gnu/cblas.h && test -f /usr/lib/x86_64-linux-gnu/libopenblas.so && echo 1)
BENCH_BLAS = $(if $(HAVE_OPENBLAS),-DBENCH_OPENBLAS -I/usr/include/x86_64-linux-gnu,)
BENCH_LIBS = $(if $(HAVE_OPENBLAS),-lopenblas,)
bench:
	$(CC) $(CPPFLAGS) $(CFLAGS) $(BENCH_BLAS) -o bench bench.c $(LIB) $(LDLIBS) $(BENCH_LIBS)
	./bench

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

fixtures: train tests/st_compare
	./tests/make_fixtures.sh

clean:
	rm -f train compare bench $(TESTS)
