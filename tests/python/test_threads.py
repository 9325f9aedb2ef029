"""The GIL is released while kjit compiles and looks up, and many threads may call it at once."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import kjit
from conftest import ARCH, fresh_program, saxpy_program


def test_python_keeps_running_while_two_threads_compile(cache):
    programs = [fresh_program() for _ in range(6)]
    binaries = []

    def compile_three(mine):
        binaries.extend(cache.get(program, ARCH) for program in mine)

    workers = [threading.Thread(target=compile_three, args=(programs[i::2],)) for i in range(2)]
    stalled = 0.0  # time in gaps longer than a switch interval (5 ms): the loop did not run
    iterations = 0
    start = last = time.perf_counter()
    for worker in workers:
        worker.start()
    while any(worker.is_alive() for worker in workers):
        now = time.perf_counter()
        if now - last > 0.005:
            stalled += now - last
        last = now
        iterations += 1
    elapsed = time.perf_counter() - start
    assert len(binaries) == 6
    shortest_compile_s = min(binary.timings.total_ms for binary in binaries) / 1000
    compiling_s = sum(binary.timings.total_ms for binary in binaries) / 1000
    # Holding the GIL through a compile would stop this loop for every compile: stalled for all
    # of the compiles' time. Released, the loop waits at most a switch interval for a thread going
    # in or out; a machine busy with other work deschedules it now and then (one gap of 20-25 ms
    # beside 25-38 ms compiles failed the older check, the longest gap under half a compile, in a
    # CI run beside a parallel build), which this sum of stalls tolerates.
    assert shortest_compile_s > 0.01
    assert stalled < compiling_s / 2, (stalled, compiling_s)
    assert iterations > 1000
    assert elapsed >= 3 * shortest_compile_s  # NVRTC runs one compile at a time per process


def test_many_threads_get_the_same_binaries(cache):
    programs = [fresh_program() for _ in range(4)]

    def get(i):
        program = programs[i % len(programs)]
        return i % len(programs), cache.get(program, ARCH).cubin

    with ThreadPoolExecutor(max_workers=16) as pool:
        results = list(pool.map(get, range(400)))
    by_program = {}
    for index, cubin in results:
        by_program.setdefault(index, set()).add(cubin)
    assert all(len(cubins) == 1 for cubins in by_program.values())
    assert len(by_program) == 4
    stats = cache.stats()
    assert stats["compiles"] == 4  # each key compiled once, however many threads asked at once
    # Every lookup counted once: a thread that asks after a compile's commit and before its result
    # is in the memory tier is served by the store (a disk hit).
    assert stats["memory_hits"] + stats["disk_hits"] + stats["misses"] == 400


def test_many_threads_through_the_default_cache():
    program = saxpy_program(options=["-DTHREADED_DEFAULT=1"])
    expected = kjit.get(program, ARCH).cubin

    def lookup(_):
        found = kjit.lookup(program, ARCH)
        return found.source, found.binary.cubin

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lookup, range(200)))
    assert all(source == "memory" and cubin == expected for source, cubin in results)
