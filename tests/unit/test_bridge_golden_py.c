/* test_bridge_golden_py.c — the sched (engine/collect/collect_sched.c), python (with python.heap),
 * window (sampling, io_files, the window parts of python) and rank bridges give, for fixed inputs
 * (unmeasured fields, a window vs none, invalid UTF-8, empty lists), the exact JSON they gave
 * before their keys became schema tables (engine/bridge/schema.h): same keys, order and values. Run
 * with SOP_GOLDEN_PRINT=1 to print what they give now as C literals. Depends on engine/bridge,
 * engine/collect/collect_sched.h, engine/sample/sample_agg.c, engine/bridge/rank_identity.c,
 * engine/core/json.c, t.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "bridge/bridge.h"
#include "bridge/window.h"
#include "collect_sched.h"
#include "json.h"
#include "python/cpython.h"
#include "python/heap_census.h"
#include "rank_identity.h"
#include "sample_agg.h"
#include "t.h"

static const char *const expected[] = {
    "{}",
    "{}",
    "{\"sched\":{\"window_s\":2,\"polls\":5,\"effective_cpus\":2,\"capacity_cpus\":1.5,\"cpu_s\":4,"
    "\"runqueue_wait_s\":0.25,\"runnable_load\":2.125,\"threads\":2,\"threads_seen\":4,\"cut\":"
    "true,\"procs\":[{\"pid\":10,\"ppid\":1,\"comm\":\"py\xef"
    "\xbf"
    "\xbd"
    "\",\"cmdline\":\"python3 "
    "train.py\",\"threads\":2,\"threads_seen\":3,\"threads_born\":1,\"threads_exited\":1,\"cpu_s\":"
    "4,\"wait_s\":0.25,\"load\":2.125,\"libs\":[{\"kind\":\"blas\",\"name\":\"libopenblas\"},{"
    "\"kind\":\"openmp\",\"name\":\"libgomp\"}],\"names\":[{\"name\":\"python3\",\"count\":1,\"cpu_"
    "s\":1.5,\"wait_s\":0.25},{\"name\":\"worker\",\"count\":2,\"cpu_s\":2.5,\"wait_s\":0}],"
    "\"top\":[{\"tid\":13,\"name\":\"worker\",\"cpu_s\":2,\"wait_s\":0},{\"tid\":10,\"name\":"
    "\"python3\",\"cpu_s\":1.5,\"wait_s\":0.25},{\"tid\":12,\"name\":\"worker\",\"cpu_s\":0.5,"
    "\"wait_s\":0,\"exited\":true}]},{\"pid\":11,\"threads\":0,\"threads_seen\":1,\"threads_born\":"
    "1,\"threads_exited\":1,\"cpu_s\":0,\"wait_s\":0,\"load\":0,\"exited\":true,\"born\":true,"
    "\"names\":[{\"name\":\"w\xef"
    "\xbf"
    "\xbd"
    "\",\"count\":1,\"cpu_s\":0,\"wait_s\":0}],\"top\":[{\"tid\":11,\"name\":\"w\xef"
    "\xbf"
    "\xbd"
    "\",\"cpu_s\":0,\"wait_s\":0,\"exited\":true}]}]}}",
    "{\"sched\":{\"window_s\":2,\"polls\":5,\"cpu_s\":0.19,\"runqueue_wait_s\":0,\"runnable_load\":"
    "0.095,\"threads\":20,\"threads_seen\":20,\"procs\":[{\"pid\":20,\"threads\":20,\"threads_"
    "seen\":20,\"threads_born\":0,\"threads_exited\":0,\"cpu_s\":0.19,\"wait_s\":0,\"load\":0.095,"
    "\"names\":[{\"name\":\"t0\",\"count\":1,\"cpu_s\":0,\"wait_s\":0},{\"name\":\"t1\",\"count\":"
    "1,\"cpu_s\":0.001,\"wait_s\":0},{\"name\":\"t2\",\"count\":1,\"cpu_s\":0.002,\"wait_s\":0},{"
    "\"name\":\"t3\",\"count\":1,\"cpu_s\":0.003,\"wait_s\":0},{\"name\":\"t4\",\"count\":1,\"cpu_"
    "s\":0.004,\"wait_s\":0},{\"name\":\"t5\",\"count\":1,\"cpu_s\":0.005,\"wait_s\":0},{\"name\":"
    "\"t6\",\"count\":1,\"cpu_s\":0.006,\"wait_s\":0},{\"name\":\"t7\",\"count\":1,\"cpu_s\":0.007,"
    "\"wait_s\":0},{\"name\":\"t8\",\"count\":1,\"cpu_s\":0.008,\"wait_s\":0},{\"name\":\"t9\","
    "\"count\":1,\"cpu_s\":0.009,\"wait_s\":0},{\"name\":\"t10\",\"count\":1,\"cpu_s\":0.01,\"wait_"
    "s\":0},{\"name\":\"t11\",\"count\":1,\"cpu_s\":0.011,\"wait_s\":0},{\"name\":\"t12\","
    "\"count\":1,\"cpu_s\":0.012,\"wait_s\":0},{\"name\":\"t13\",\"count\":1,\"cpu_s\":0.013,"
    "\"wait_s\":0},{\"name\":\"t14\",\"count\":1,\"cpu_s\":0.014,\"wait_s\":0},{\"name\":\"t15\","
    "\"count\":1,\"cpu_s\":0.015,\"wait_s\":0}],\"names_cut\":true,\"top\":[{\"tid\":39,\"name\":"
    "\"t19\",\"cpu_s\":0.019,\"wait_s\":0},{\"tid\":38,\"name\":\"t18\",\"cpu_s\":0.018,\"wait_s\":"
    "0},{\"tid\":37,\"name\":\"t17\",\"cpu_s\":0.017,\"wait_s\":0},{\"tid\":36,\"name\":\"t16\","
    "\"cpu_s\":0.016,\"wait_s\":0},{\"tid\":35,\"name\":\"t15\",\"cpu_s\":0.015,\"wait_s\":0},{"
    "\"tid\":34,\"name\":\"t14\",\"cpu_s\":0.014,\"wait_s\":0},{\"tid\":33,\"name\":\"t13\",\"cpu_"
    "s\":0.013,\"wait_s\":0},{\"tid\":32,\"name\":\"t12\",\"cpu_s\":0.012,\"wait_s\":0},{\"tid\":"
    "31,\"name\":\"t11\",\"cpu_s\":0.011,\"wait_s\":0},{\"tid\":30,\"name\":\"t10\",\"cpu_s\":0.01,"
    "\"wait_s\":0},{\"tid\":29,\"name\":\"t9\",\"cpu_s\":0.009,\"wait_s\":0},{\"tid\":28,\"name\":"
    "\"t8\",\"cpu_s\":0.008,\"wait_s\":0},{\"tid\":27,\"name\":\"t7\",\"cpu_s\":0.007,\"wait_s\":0}"
    ",{\"tid\":26,\"name\":\"t6\",\"cpu_s\":0.006,\"wait_s\":0},{\"tid\":25,\"name\":\"t5\",\"cpu_"
    "s\":0.005,\"wait_s\":0},{\"tid\":24,\"name\":\"t4\",\"cpu_s\":0.004,\"wait_s\":0}]}]}}",
    "{\"sched\":{\"window_s\":2,\"polls\":5,\"cpu_s\":0,\"runqueue_wait_s\":0,\"runnable_load\":0,"
    "\"threads\":0,\"threads_seen\":0,\"procs\":[]}}",
    "{}",
    "{\"python\":{\"version\":\"\",\"executable\":\"\",\"gc\":{},\"walk\":{\"retries\":0,\"threads_"
    "partial\":0,\"threads_stopped\":0,\"pause_ms\":0},\"threads\":[]}}",
    "[]",
    "{\"python\":{\"version\":\"3.11.2\",\"executable\":\"/usr/bin/python3\xef"
    "\xbf"
    "\xbd"
    "\",\"libpython\":\"/usr/lib/libpython3.11.so\",\"layout\":\"table "
    "3.11\",\"gil_holder_tid\":100,\"finalizing\":true,\"gc\":{\"enabled\":true,\"collecting\":"
    "false,\"thresholds\":[700,699,698],\"counts\":[0,1,2],\"frozen\":3,\"collections\":[0,10,20]},"
    "\"walk\":{\"retries\":4,\"threads_partial\":1,\"threads_stopped\":2,\"pause_ms\":1.75},"
    "\"threads\":[{\"tid\":100,\"thread_id\":140000000000,\"name\":\"MainThread\",\"interp\":0,"
    "\"state\":\"active\",\"gil\":true,\"os_state\":\"R\",\"frames\":[{\"func\":\"inner\",\"file\":"
    "\"/app/x.py\",\"line\":12},{\"func\":\"f\xef"
    "\xbf"
    "\xbd"
    "\",\"file\":\"/app/"
    "y.py\"}],\"truncated\":true,\"complete\":false,\"walk_retries\":2,\"stopped\":true,\"pause_"
    "ms\":1.5},{\"name\":\"bad\xef"
    "\xbf"
    "\xbd"
    "\",\"name_source\":\"comm\",\"tid_source\":\"unknown\",\"state\":\"idle\",\"gil\":false,"
    "\"frames\":[],\"complete\":false,\"partial\":\"chain changed\xef"
    "\xbf"
    "\xbd"
    "\"},{\"tid\":102,\"interp\":2,\"tid_source\":\"stack\",\"state\":\"idle\",\"gil\":false,\"os_"
    "state\":\"S\",\"frames\":[{\"func\":\"inner\",\"file\":\"/app/"
    "x.py\",\"line\":12},{\"func\":\"f\xef"
    "\xbf"
    "\xbd"
    "\",\"file\":\"/app/"
    "y.py\"}],\"complete\":true,\"stopped\":true,\"native\":[{\"func\":\"clock_nanosleep\",\"lib\":"
    "\"libc.so.6\"},{\"func\":\"inner\",\"file\":\"/app/"
    "x.py\",\"line\":12,\"lib\":\"python\"},{\"func\":\"_PyEval_EvalFrameDefault\",\"lib\":"
    "\"libpython3.11.so\"}],\"pause_ms\":0.25},{\"tid\":103,\"interp\":0,\"state\":\"idle\","
    "\"gil\":false,\"os_state\":\"D\",\"frames\":[],\"complete\":true,\"native_error\":\"ptrace: "
    "EPERM\"}]}}",
    "[{\"tid\":200,\"name\":\"cuda\xef"
    "\xbf"
    "\xbd"
    "\",\"os_state\":\"R\",\"state\":\"active\",\"native\":[{\"func\":\"epoll_wait\",\"lib\":"
    "\"libc\xef"
    "\xbf"
    "\xbd"
    ".so\"}],\"pause_ms\":0.5},{\"tid\":201,\"name\":\"\",\"os_state\":\"?\",\"state\":\"idle\","
    "\"native_error\":\"gone\"}]",
    "{\"python\":{\"version\":\"3.12.1\",\"executable\":\"\",\"gc\":{\"thresholds\":[1,-9."
    "2233720368547758e+18,-9.2233720368547758e+18],\"counts\":[2,-9.2233720368547758e+18,-9."
    "2233720368547758e+18]},\"walk\":{\"retries\":0,\"threads_partial\":0,\"threads_stopped\":0,"
    "\"pause_ms\":0},\"threads\":[]}}",
    "[]",
    "{}",
    "{\"complete\":true,\"objects\":1000,\"bytes\":2097152,\"untracked\":40,\"types_total\":3,"
    "\"lists\":{\"gen0\":{\"objects\":0,\"complete\":true},\"gen1\":{\"objects\":10,\"complete\":"
    "true},\"gen2\":{\"objects\":20,\"complete\":false},\"permanent\":{\"objects\":30,\"complete\":"
    "true}},\"types\":[{\"name\":\"dict\",\"count\":10,\"bytes\":1000,\"frozen\":2},{\"name\":"
    "\"str\xef"
    "\xbf"
    "\xbd"
    "\",\"count\":5,\"bytes\":500,\"untracked\":true}],\"gc_enabled\":1,\"version\":\"3.11.2\","
    "\"census_ms\":12.5,\"stopped\":false}",
    "{\"complete\":true,\"objects\":1500,\"bytes\":3145728,\"untracked\":40,\"types_total\":3,"
    "\"lists\":{\"gen0\":{\"objects\":0,\"complete\":true},\"gen1\":{\"objects\":10,\"complete\":"
    "true},\"gen2\":{\"objects\":20,\"complete\":false},\"permanent\":{\"objects\":30,\"complete\":"
    "true}},\"types\":[{\"name\":\"dict\",\"count\":30,\"bytes\":4000,\"frozen\":2},{\"name\":"
    "\"str\xef"
    "\xbf"
    "\xbd"
    "\",\"count\":5,\"bytes\":500,\"untracked\":true}],\"anon_kb\":8192,\"explained\":0.375,\"gc_"
    "enabled\":1,\"version\":\"3.11.2\",\"census_ms\":22.5,\"stopped\":false,\"window_s\":2.5,"
    "\"growth\":[{\"name\":\"dict\",\"count\":20,\"bytes\":3000}],\"objects_growth\":500,\"bytes_"
    "growth\":1048576,\"anon_growth_kb\":0}",
    "{\"complete\":false,\"partial\":\"gen2 stopped\xef"
    "\xbf"
    "\xbd"
    "\",\"objects\":1000,\"bytes\":2097152,\"untracked\":40,\"types_total\":3,\"lists\":{\"gen0\":{"
    "\"objects\":0,\"complete\":true},\"gen1\":{\"objects\":10,\"complete\":true},\"gen2\":{"
    "\"objects\":20,\"complete\":false},\"permanent\":{\"objects\":30,\"complete\":true}},"
    "\"types\":[{\"name\":\"dict\",\"count\":10,\"bytes\":1000,\"frozen\":2},{\"name\":\"str\xef"
    "\xbf"
    "\xbd"
    "\",\"count\":5,\"bytes\":500,\"untracked\":true}],\"anon_kb\":8192,\"explained\":0.25,\"gc_"
    "enabled\":1,\"version\":\"3.11.2\",\"census_ms\":12.5,\"stopped\":false}",
    "{\"complete\":false,\"partial\":\"gen2 stopped\xef"
    "\xbf"
    "\xbd"
    "\",\"objects\":1500,\"bytes\":3145728,\"untracked\":40,\"types_total\":3,\"lists\":{\"gen0\":{"
    "\"objects\":0,\"complete\":true},\"gen1\":{\"objects\":10,\"complete\":true},\"gen2\":{"
    "\"objects\":20,\"complete\":false},\"permanent\":{\"objects\":30,\"complete\":true}},"
    "\"types\":[{\"name\":\"dict\",\"count\":30,\"bytes\":4000,\"frozen\":2},{\"name\":\"str\xef"
    "\xbf"
    "\xbd"
    "\",\"count\":5,\"bytes\":500,\"untracked\":true}],\"anon_kb\":8704,\"explained\":0."
    "35294117647058826,\"gc_enabled\":1,\"version\":\"3.11.2\",\"census_ms\":22.5,\"stopped\":"
    "false,\"window_s\":2.5,\"growth\":[{\"name\":\"dict\",\"count\":20,\"bytes\":3000}],\"objects_"
    "growth\":500,\"bytes_growth\":1048576}",
    "{\"complete\":true,\"objects\":1000,\"bytes\":2097152,\"untracked\":40,\"types_total\":3,"
    "\"lists\":{\"gen0\":{\"objects\":0,\"complete\":true},\"gen1\":{\"objects\":10,\"complete\":"
    "true},\"gen2\":{\"objects\":20,\"complete\":false},\"permanent\":{\"objects\":30,\"complete\":"
    "true}},\"types\":[{\"name\":\"dict\",\"count\":10,\"bytes\":1000,\"frozen\":2},{\"name\":"
    "\"str\xef"
    "\xbf"
    "\xbd"
    "\",\"count\":5,\"bytes\":500,\"untracked\":true}],\"anon_kb\":8192,\"explained\":0.25,"
    "\"version\":\"3.11.2\",\"census_ms\":12.5,\"stopped\":false}",
    "{\"complete\":false,\"partial\":\"second\",\"objects\":1500,\"bytes\":3145728,\"untracked\":"
    "40,\"types_total\":3,\"lists\":{\"gen0\":{\"objects\":0,\"complete\":true},\"gen1\":{"
    "\"objects\":10,\"complete\":true},\"gen2\":{\"objects\":20,\"complete\":false},\"permanent\":{"
    "\"objects\":30,\"complete\":true}},\"types\":[{\"name\":\"dict\",\"count\":30,\"bytes\":4000,"
    "\"frozen\":2},{\"name\":\"str\xef"
    "\xbf"
    "\xbd"
    "\",\"count\":5,\"bytes\":500,\"untracked\":true}],\"anon_kb\":9216,\"explained\":0."
    "33333333333333331,\"version\":\"3.11.2\",\"census_ms\":22.5,\"stopped\":false,\"window_s\":2."
    "5,\"growth\":[{\"name\":\"dict\",\"count\":20,\"bytes\":3000}],\"objects_growth\":500,\"bytes_"
    "growth\":1048576,\"anon_growth_kb\":1024,\"growth_explained\":1}",
    "{\"complete\":true,\"objects\":1000,\"bytes\":2097152,\"untracked\":40,\"numpy\":{\"arrays\":"
    "2,\"nbytes\":4096},\"types_total\":3,\"lists\":{\"gen0\":{\"objects\":0,\"complete\":true},"
    "\"gen1\":{\"objects\":10,\"complete\":true},\"gen2\":{\"objects\":20,\"complete\":false},"
    "\"permanent\":{\"objects\":30,\"complete\":true}},\"restarts\":1,\"types\":[{\"name\":"
    "\"dict\",\"count\":10,\"bytes\":1000,\"frozen\":2},{\"name\":\"str\xef"
    "\xbf"
    "\xbd"
    "\",\"count\":5,\"bytes\":500,\"untracked\":true}],\"anon_kb\":8192,\"explained\":0.25,\"gc_"
    "enabled\":1,\"version\":\"3.11.2\",\"census_ms\":12.5,\"stopped\":true,\"pause_ms\":3}",
    "{\"complete\":true,\"objects\":1500,\"bytes\":3145728,\"untracked\":40,\"numpy\":{\"arrays\":"
    "2,\"nbytes\":8192,\"nbytes_growth\":4096},\"types_total\":3,\"lists\":{\"gen0\":{\"objects\":"
    "0,\"complete\":true},\"gen1\":{\"objects\":10,\"complete\":true},\"gen2\":{\"objects\":20,"
    "\"complete\":false},\"permanent\":{\"objects\":30,\"complete\":true}},\"restarts\":1,"
    "\"types\":[{\"name\":\"dict\",\"count\":30,\"bytes\":4000,\"frozen\":2},{\"name\":\"str\xef"
    "\xbf"
    "\xbd"
    "\",\"count\":5,\"bytes\":500,\"untracked\":true}],\"anon_kb\":9728,\"explained\":0."
    "31578947368421051,\"gc_enabled\":1,\"version\":\"3.11.2\",\"census_ms\":22.5,\"stopped\":true,"
    "\"pause_ms\":5,\"window_s\":2.5,\"growth\":[{\"name\":\"dict\",\"count\":20,\"bytes\":3000}],"
    "\"objects_growth\":500,\"bytes_growth\":1048576,\"anon_growth_kb\":1536,\"growth_explained\":"
    "0.66666666666666663}",
    "{\"complete\":true,\"objects\":0,\"bytes\":0,\"untracked\":0,\"types_total\":0,\"lists\":{"
    "\"gen0\":{\"objects\":0,\"complete\":false},\"gen1\":{\"objects\":0,\"complete\":false},"
    "\"gen2\":{\"objects\":0,\"complete\":false},\"permanent\":{\"objects\":0,\"complete\":false}},"
    "\"types\":[],\"version\":\"\",\"census_ms\":0,\"stopped\":true,\"pause_ms\":0}",
    "{\"sampling\":{\"rate_hz\":100,\"samples\":8,\"missed\":1,\"thread_samples\":0,\"samples_"
    "partial\":0,\"walk_retries\":3,\"self_cpu_ms\":2.5,\"window_s\":2,\"processes\":1}}",
    "{\"effective_cpus\":4,\"host\":{\"disks\":[{\"name\":\"sda\",\"util_pct\":50,\"read_kb_per_"
    "s\":100}]},\"children\":[{\"pid\":200,\"cpu_pct\":80,\"rchar_per_s\":500,\"env\":{\"OMP_NUM_"
    "THREADS\":\"1\"}}],\"python\":{\"threads\":[{\"tid\":100,\"window\":{\"samples\":4,\"active_"
    "frac\":0.75,\"gil_frac\":0.75,\"runnable_nogil_frac\":0,\"gil_wait_frac\":0,\"running_frac\":"
    "0.75,\"io_wait_frac\":0,\"data_wait_frac\":0,\"checkpoint_frac\":0,\"import_frac\":0,"
    "\"logging_frac\":0.25,\"logging_format_frac\":0,\"logging_write_frac\":0,\"subprocess_frac\":"
    "0,\"subprocess_spawn_frac\":0,\"logging_site\":\"main\xef"
    "\xbf"
    "\xbd"
    " (/app/"
    "train.py:10)\",\"logging_site_frac\":0.25,\"majflt_frac\":0,\"fault_wait_frac\":0,"
    "\"collective_frac\":0,\"own_frac\":1,"
    "\"lock_wait_frac\":0,\"lock_timed_frac\":0,\"net_wait_frac\":0,\"read_wait_frac\":0,\"timer_"
    "wait_frac\":0,\"child_wait_frac\":0,\"signal_wait_frac\":0,\"own_frame\":\"main\xef"
    "\xbf"
    "\xbd"
    " (/app/train.py:9)\",\"own_frame_frac\":0.75,\"top_stacks\":[{\"stack\":\"main\\ufffd "
    "(train.py);dumps (__init__.py);JSONEncoder.encode "
    "(encoder.py)\",\"count\":3},{\"stack\":\"main\\ufffd (train.py);Logger.info "
    "(__init__.py)\",\"count\":1}],\"dist\":{\"frames\":[\"main\\ufffd (train.py)\",\"Logger.info "
    "(__init__.py)\",\"dumps (__init__.py)\",\"JSONEncoder.encode "
    "(encoder.py)\"],\"stacks\":[{\"ids\":[1,2],\"count\":1},{\"ids\":[1,3,4],\"count\":3}],"
    "\"samples\":4,\"stored\":4},\"leaves\":[{\"count\":3,\"active\":2,\"leaf\":{\"func\":"
    "\"JSONEncoder.encode\",\"file\":\"/usr/lib/python3.11/json/"
    "encoder.py\",\"line\":200},\"entry\":{\"func\":\"dumps\",\"file\":\"/usr/lib/python3.11/json/"
    "__init__.py\",\"line\":231},\"caller\":{\"func\":\"main\xef"
    "\xbf"
    "\xbd"
    "\",\"file\":\"/app/"
    "train.py\",\"line\":9}},{\"count\":1,\"active\":1,\"leaf\":{\"func\":\"Logger.info\",\"file\":"
    "\"/usr/lib/python3.11/logging/"
    "__init__.py\",\"line\":1400},\"entry\":{\"func\":\"Logger.info\",\"file\":\"/usr/lib/"
    "python3.11/logging/__init__.py\",\"line\":1400},\"caller\":{\"func\":\"main\xef"
    "\xbf"
    "\xbd"
    "\",\"file\":\"/app/train.py\",\"line\":10}}],\"entries\":[{\"func\":\"dumps\",\"file\":\"/usr/"
    "lib/python3.11/json/"
    "__init__.py\",\"count\":3,\"active\":2,\"top_site_active\":2,\"sites\":1},{\"func\":\"Logger."
    "info\",\"file\":\"/usr/lib/python3.11/logging/"
    "__init__.py\",\"count\":1,\"active\":1,\"top_site_active\":1,\"sites\":1}]}},{\"tid\":101,"
    "\"window\":{\"samples\":4,\"active_frac\":0.75,\"gil_frac\":0.75,\"runnable_nogil_frac\":0,"
    "\"gil_wait_frac\":0,\"running_frac\":0.75,\"io_wait_frac\":0,\"data_wait_frac\":0,"
    "\"checkpoint_frac\":0,\"loop_longest_block_ms\":30,\"import_frac\":0,\"logging_frac\":0,"
    "\"logging_format_frac\":0,\"logging_write_frac\":0,\"subprocess_frac\":0,\"subprocess_spawn_"
    "frac\":0,\"majflt_frac\":0,\"fault_wait_frac\":0,\"collective_frac\":0,\"own_frac\":0.75,"
    "\"lock_wait_frac\":0,\"lock_timed_frac\":0,\"net_wait_frac\":0,\"read_wait_frac\":0,\"timer_"
    "wait_frac\":0,\"child_wait_frac\":0,\"signal_wait_frac\":0,"
    "\"own_frame\":\"handler "
    "(/app/"
    "srv.py:5)\",\"own_frame_frac\":0.75,\"top_stacks\":[{\"stack\":\"BaseEventLoop.run_forever "
    "(base_events.py);BaseEventLoop._run_once (base_events.py);Handle._run (events.py);handler "
    "(srv.py)\",\"count\":3},{\"stack\":\"BaseEventLoop.run_forever "
    "(base_events.py);BaseEventLoop._run_once (base_events.py);EpollSelector.select "
    "(selectors.py)\",\"count\":1}],\"dist\":{\"frames\":[\"BaseEventLoop.run_forever "
    "(base_events.py)\",\"BaseEventLoop._run_once (base_events.py)\",\"EpollSelector.select "
    "(selectors.py)\",\"Handle._run (events.py)\",\"handler "
    "(srv.py)\"],\"stacks\":[{\"ids\":[1,2,3],\"count\":1},{\"ids\":[1,2,4,5],\"count\":3}],"
    "\"samples\":4,\"stored\":4},\"leaves\":[{\"count\":3,\"active\":3,\"leaf\":{\"func\":"
    "\"handler\",\"file\":\"/app/srv.py\",\"line\":5},\"caller\":{\"func\":\"handler\",\"file\":\"/"
    "app/"
    "srv.py\",\"line\":5}},{\"count\":1,\"active\":0,\"leaf\":{\"func\":\"EpollSelector.select\","
    "\"file\":\"/usr/lib/python3.11/"
    "selectors.py\",\"line\":468}}]}},{\"tid\":999},{}],\"gc\":{\"window\":{\"samples\":4,"
    "\"collecting_frac\":0.5,\"longest_collecting_ms\":20,\"collections\":[3,0,0],\"collections_"
    "per_s\":[100,0,0]}},\"loop\":{\"tid\":101,\"longest_block_ms\":30,\"frame\":\"handler "
    "(/app/srv.py:5)\",\"frames\":[{\"func\":\"handler\",\"file\":\"/app/"
    "srv.py\",\"line\":5}]}},\"sampling\":{\"rate_hz\":100,\"samples\":8,\"missed\":1,\"thread_"
    "samples\":8,\"samples_partial\":0,\"walk_retries\":3,\"self_cpu_ms\":2.5,\"window_s\":0,"
    "\"processes\":1},\"io_files\":[{\"pid\":100,\"fd\":3,\"path\":\"/data/a\xef"
    "\xbf"
    "\xbd"
    ".bin\",\"size_bytes\":1048576,\"pos_bytes\":4096,\"mount\":\"/"
    "data\",\"fstype\":\"ext4\",\"fs_kind\":\"local\",\"source\":\"/dev/"
    "sda1\",\"disk\":\"sda\",\"disk_util_pct\":50,\"disk_read_kb_per_s\":100},{\"pid\":200,\"fd\":"
    "7,\"path\":\"/tmp/x\",\"size_bytes\":0,\"mount\":\"\",\"source\":\"\"}]}",
    "{\"effective_cpus\":4,\"host\":{\"disks\":[{\"name\":\"sda\",\"util_pct\":50,\"read_kb_per_"
    "s\":100}]},\"children\":[{\"pid\":200,\"cpu_pct\":80,\"rchar_per_s\":500,\"env\":{\"OMP_NUM_"
    "THREADS\":\"1\"}}],\"python\":{\"threads\":[{\"tid\":100,\"window\":{\"samples\":4,\"active_"
    "frac\":0.75,\"gil_frac\":0.75,\"runnable_nogil_frac\":0,\"gil_wait_frac\":0,\"running_frac\":"
    "0.75,\"io_wait_frac\":0,\"data_wait_frac\":0,\"checkpoint_frac\":0,\"import_frac\":0,"
    "\"logging_frac\":0.25,\"logging_format_frac\":0,\"logging_write_frac\":0,\"subprocess_frac\":"
    "0,\"subprocess_spawn_frac\":0,\"logging_site\":\"main\xef"
    "\xbf"
    "\xbd"
    " (/app/"
    "train.py:10)\",\"logging_site_frac\":0.25,\"majflt_frac\":0,\"fault_wait_frac\":0,"
    "\"collective_frac\":0,\"own_frac\":1,"
    "\"lock_wait_frac\":0,\"lock_timed_frac\":0,\"net_wait_frac\":0,\"read_wait_frac\":0,\"timer_"
    "wait_frac\":0,\"child_wait_frac\":0,\"signal_wait_frac\":0,\"own_frame\":\"main\xef"
    "\xbf"
    "\xbd"
    " (/app/train.py:9)\",\"own_frame_frac\":0.75,\"top_stacks\":[{\"stack\":\"main\\ufffd "
    "(train.py);dumps (__init__.py);JSONEncoder.encode "
    "(encoder.py)\",\"count\":3},{\"stack\":\"main\\ufffd (train.py);Logger.info "
    "(__init__.py)\",\"count\":1}],\"dist\":{\"frames\":[\"main\\ufffd (train.py)\",\"Logger.info "
    "(__init__.py)\",\"dumps (__init__.py)\",\"JSONEncoder.encode "
    "(encoder.py)\"],\"stacks\":[{\"ids\":[1,2],\"count\":1},{\"ids\":[1,3,4],\"count\":3}],"
    "\"samples\":4,\"stored\":4},\"leaves\":[{\"count\":3,\"active\":2,\"leaf\":{\"func\":"
    "\"JSONEncoder.encode\",\"file\":\"/usr/lib/python3.11/json/"
    "encoder.py\",\"line\":200},\"entry\":{\"func\":\"dumps\",\"file\":\"/usr/lib/python3.11/json/"
    "__init__.py\",\"line\":231},\"caller\":{\"func\":\"main\xef"
    "\xbf"
    "\xbd"
    "\",\"file\":\"/app/"
    "train.py\",\"line\":9}},{\"count\":1,\"active\":1,\"leaf\":{\"func\":\"Logger.info\",\"file\":"
    "\"/usr/lib/python3.11/logging/"
    "__init__.py\",\"line\":1400},\"entry\":{\"func\":\"Logger.info\",\"file\":\"/usr/lib/"
    "python3.11/logging/__init__.py\",\"line\":1400},\"caller\":{\"func\":\"main\xef"
    "\xbf"
    "\xbd"
    "\",\"file\":\"/app/train.py\",\"line\":10}}],\"entries\":[{\"func\":\"dumps\",\"file\":\"/usr/"
    "lib/python3.11/json/"
    "__init__.py\",\"count\":3,\"active\":2,\"top_site_active\":2,\"sites\":1},{\"func\":\"Logger."
    "info\",\"file\":\"/usr/lib/python3.11/logging/"
    "__init__.py\",\"count\":1,\"active\":1,\"top_site_active\":1,\"sites\":1}]}},{\"tid\":101,"
    "\"window\":{\"samples\":4,\"active_frac\":0.75,\"gil_frac\":0.75,\"runnable_nogil_frac\":0,"
    "\"gil_wait_frac\":0,\"running_frac\":0.75,\"io_wait_frac\":0,\"data_wait_frac\":0,"
    "\"checkpoint_frac\":0,\"loop_longest_block_ms\":30,\"import_frac\":0,\"logging_frac\":0,"
    "\"logging_format_frac\":0,\"logging_write_frac\":0,\"subprocess_frac\":0,\"subprocess_spawn_"
    "frac\":0,\"majflt_frac\":0,\"fault_wait_frac\":0,\"collective_frac\":0,\"own_frac\":0.75,"
    "\"lock_wait_frac\":0,\"lock_timed_frac\":0,\"net_wait_frac\":0,\"read_wait_frac\":0,\"timer_"
    "wait_frac\":0,\"child_wait_frac\":0,\"signal_wait_frac\":0,"
    "\"own_frame\":\"handler "
    "(/app/"
    "srv.py:5)\",\"own_frame_frac\":0.75,\"top_stacks\":[{\"stack\":\"BaseEventLoop.run_forever "
    "(base_events.py);BaseEventLoop._run_once (base_events.py);Handle._run (events.py);handler "
    "(srv.py)\",\"count\":3},{\"stack\":\"BaseEventLoop.run_forever "
    "(base_events.py);BaseEventLoop._run_once (base_events.py);EpollSelector.select "
    "(selectors.py)\",\"count\":1}],\"dist\":{\"frames\":[\"BaseEventLoop.run_forever "
    "(base_events.py)\",\"BaseEventLoop._run_once (base_events.py)\",\"EpollSelector.select "
    "(selectors.py)\",\"Handle._run (events.py)\",\"handler "
    "(srv.py)\"],\"stacks\":[{\"ids\":[1,2,3],\"count\":1},{\"ids\":[1,2,4,5],\"count\":3}],"
    "\"samples\":4,\"stored\":4},\"leaves\":[{\"count\":3,\"active\":3,\"leaf\":{\"func\":"
    "\"handler\",\"file\":\"/app/srv.py\",\"line\":5},\"caller\":{\"func\":\"handler\",\"file\":\"/"
    "app/"
    "srv.py\",\"line\":5}},{\"count\":1,\"active\":0,\"leaf\":{\"func\":\"EpollSelector.select\","
    "\"file\":\"/usr/lib/python3.11/"
    "selectors.py\",\"line\":468}}]}},{\"tid\":999},{}],\"gc\":{\"window\":{\"samples\":4,"
    "\"collecting_frac\":0.5,\"longest_collecting_ms\":20,\"collections\":[3,0,0],\"collections_"
    "per_s\":[100,0,0]}},\"loop\":{\"tid\":101,\"longest_block_ms\":30,\"frame\":\"handler "
    "(/app/srv.py:5)\",\"frames\":[{\"func\":\"handler\",\"file\":\"/app/"
    "srv.py\",\"line\":5}]},\"workers\":[{\"pid\":200,\"comm\":\"pt_data_worker\",\"cmdline\":"
    "\"python3 "
    "train.py\",\"threads\":[{\"tid\":200,\"name\":\"worker\",\"window\":{\"samples\":4,\"active_"
    "frac\":0.5,\"gil_frac\":0,\"runnable_nogil_frac\":0.5,\"gil_wait_frac\":0,\"running_frac\":0."
    "5,\"io_wait_frac\":0.25,\"data_wait_frac\":0,\"checkpoint_frac\":0,\"import_frac\":0,"
    "\"logging_frac\":0,\"logging_format_frac\":0,\"logging_write_frac\":0,\"subprocess_frac\":0,"
    "\"subprocess_spawn_frac\":0,\"majflt_frac\":0.25,\"fault_wait_frac\":0.25,\"fault_site\":"
    "\"load (/app/data.py:42)\",\"fault_site_frac\":0.25,\"fresh_frac\":0.25,\"fresh_kb\":812,"
    "\"collective_frac\":0,\"own_frac\":1,"
    "\"lock_wait_frac\":0,\"lock_timed_frac\":0,\"net_wait_frac\":0,\"read_wait_frac\":0,\"timer_"
    "wait_frac\":0,\"child_wait_frac\":0,\"signal_wait_frac\":0,\"own_frame\":\"load "
    "(/app/data.py:42)\",\"own_frame_frac\":1,"
    "\"top_stacks\":[{\"stack\":\"load "
    "(data.py)\",\"count\":4}],\"dist\":{\"frames\":[\"load "
    "(data.py)\"],\"stacks\":[{\"ids\":[1],\"count\":4}],\"samples\":4,\"stored\":4},\"leaves\":[{"
    "\"count\":4,\"active\":2,\"fresh\":1,\"fresh_kb\":812,\"leaf\":{\"func\":\"load\",\"file\":\"/"
    "app/"
    "data.py\",\"line\":42},\"caller\":{\"func\":\"load\",\"file\":\"/app/"
    "data.py\",\"line\":42}}]}}],\"cpu_frac\":0.5,\"io_frac\":0.25,\"idle_frac\":0.25,\"samples\":"
    "4,\"start_time_s\":1005,\"age_s\":5,\"exited\":true,\"start_method\":\"fork\",\"io\":{\"read_"
    "bytes_per_s\":2048,\"rchar_per_s\":500,\"syscr_per_s\":5,\"mean_read_bytes\":100,\"wchar_per_"
    "s\":0,\"syscw_per_s\":0},\"rchar_per_s\":500,\"cpu_pct\":80,\"env\":{\"OMP_NUM_THREADS\":"
    "\"1\"}}],\"loader\":{\"workers\":1,\"workers_per_cpu\":0.25,\"main_data_wait_frac\":0,"
    "\"workers_cpu_frac\":0.5,\"workers_io_frac\":0.25,\"workers_idle_frac\":0.25}},\"sampling\":{"
    "\"rate_hz\":100,\"samples\":8,\"missed\":1,\"thread_samples\":12,\"samples_partial\":0,\"walk_"
    "retries\":3,\"self_cpu_ms\":2.5,\"window_s\":2,\"processes\":2},\"io_files\":[{\"pid\":100,"
    "\"fd\":3,\"path\":\"/data/a\xef"
    "\xbf"
    "\xbd"
    ".bin\",\"size_bytes\":1048576,\"pos_bytes\":4096,\"advance_bytes_per_s\":2048,\"mount\":\"/"
    "data\",\"fstype\":\"ext4\",\"fs_kind\":\"local\",\"source\":\"/dev/"
    "sda1\",\"disk\":\"sda\",\"disk_util_pct\":50,\"disk_read_kb_per_s\":100},{\"pid\":200,\"fd\":"
    "7,\"path\":\"/tmp/x\",\"size_bytes\":0,\"mount\":\"\",\"source\":\"\"}]}",
    "{}",
    "{\"proc\":{\"env\":{\"PATH\":\"/bin\"}}}",
    "{\"proc\":{\"env\":{\"RANK\":\"3\",\"LOCAL_RANK\":\"1\",\"WORLD_SIZE\":\"8\"}},\"rank\":{"
    "\"rank\":3,\"local_rank\":1,\"world_size\":8,\"node\":\"NODE\",\"source\":\"torch."
    "distributed\"}}",
    "{\"proc\":{\"env\":{\"SLURM_PROCID\":\"2\",\"SLURM_NTASKS\":\"x\",\"SLURM_JOB_ID\":\"77\"}},"
    "\"rank\":{\"rank\":2,\"job_id\":\"77\",\"node\":\"NODE\",\"source\":\"slurm\"}}",
    "{\"proc\":{\"env\":{\"TORCHELASTIC_RUN_ID\":\"none\",\"LOCAL_RANK\":\"0\"}},\"rank\":{\"local_"
    "rank\":0,\"node\":\"NODE\",\"source\":\"slurm\"}}",
    "{\"proc\":{\"env\":{\"TORCHELASTIC_RUN_ID\":\"abc\"}},\"rank\":{\"job_id\":\"abc\",\"node\":"
    "\"NODE\",\"source\":\"slurm\"}}",
};
static size_t seen;
static bool print_mode;

static void print_literal(const char *s)
{
    printf("    \"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if (*p < 0x20 || *p >= 0x7f)
            printf("\\x%02x\"\"", *p); /* end the literal: a hex escape would eat what follows */
        else
            putchar(*p);
    }
    printf("\",\n");
}

static void out_json(sop_value *ev)
{
    char *s = sop__json_print(ev, 0);
    if (print_mode) {
        if (s)
            print_literal(s);
    } else {
        CHECK(seen < sizeof expected / sizeof expected[0]);
        if (s && seen < sizeof expected / sizeof expected[0] && expected[seen])
            CHECK_EQ_S(s, expected[seen]);
        else
            CHECK(s && seen < sizeof expected / sizeof expected[0] && expected[seen]);
    }
    seen++;
    free(s);
    sop__v_free(ev);
}

/* ---- sched ---- */

static void sched_cases(void)
{
    static sop_tree_thread th[20];
    static sop_tree_sched t;
    for (int v = 0; v < 5; v++) {
        memset(&t, 0, sizeof t);
        memset(th, 0, sizeof th);
        t.threads = th;
        t.polls = v == 0 ? 1 : 5;
        t.first_poll_ms = 1000;
        t.last_poll_ms = v == 1 ? 1000 : 3000; /* v1: no window */
        if (v == 2) {
            t.nprocs = 2;
            t.procs[0] = (sop_tree_proc){.pid = 10, .ppid = 1, .at_start = true, .alive = true};
            strcpy(t.procs[0].comm, "py\xff");
            strcpy(t.procs[0].cmdline, "python3 train.py");
            strcpy(t.procs[0].libs[0].kind, "blas");
            strcpy(t.procs[0].libs[0].name, "libopenblas");
            strcpy(t.procs[0].libs[1].kind, "openmp");
            strcpy(t.procs[0].libs[1].name, "libgomp");
            t.procs[0].nlibs = 2;
            t.procs[1] = (sop_tree_proc){.pid = 11, .ppid = 0, .at_start = false, .alive = false};
            t.nthreads = 4;
            th[0] = (sop_tree_thread){10, 10, "python3", 0, 0, 1500000000, 250000000, true, true};
            th[1] = (sop_tree_thread){10, 12, "worker", 100, 0, 500000100, 0, false, false};
            th[2] = (sop_tree_thread){10, 13, "worker", 0, 0, 2000000000, 0, true, true};
            th[3] = (sop_tree_thread){11, 11, "w\xc3", 0, 0, 0, 0, false, false};
            t.dropped = true;
        }
        if (v == 3) { /* more than 16 names and 16 threads in one process */
            t.nprocs = 1;
            t.procs[0] = (sop_tree_proc){.pid = 20, .ppid = 0, .at_start = true, .alive = true};
            t.nthreads = 20;
            for (int i = 0; i < 20; i++) {
                th[i] =
                    (sop_tree_thread){20, 20 + i, "", 0, 0, (int64_t)i * 1000000, 0, true, true};
                snprintf(th[i].name, sizeof th[i].name, "t%d", i);
            }
        }
        /* v4: a window with no thread at all */
        sop_value *ev = sop__v_obj();
        sop__bridge_sched(ev, &t, v == 2 ? 2 : SOP_NA, v == 2 ? 1.5 : NAN);
        out_json(ev);
    }
    sop_value *ev = sop__v_obj();
    sop__bridge_sched(ev, NULL, 1, 1);
    out_json(ev);
}

/* ---- python ---- */

static sop_pyframe frames_a[] = {
    {"inner", "/app/x.py", 12, false, 0},
    {"f\xfe", "/app/y.py", -1, true, 0},
};
static sop_nframe native_a[] = {
    {"clock_nanosleep", "libc.so.6", 0x10, -1},
    {"", "", 0, 0},
    {"_PyEval_EvalFrameDefault", "libpython3.11.so", 0x20, 7},
};
static sop_nframe native_o[] = {{"epoll_wait", "libc\xff.so", 0x30, -1}};

static void python_cases(void)
{
    for (int v = 0; v < 3; v++) {
        sop_python py;
        memset(&py, 0, sizeof py);
        sop_pythread th[4];
        memset(th, 0, sizeof th);
        sop_ostask os[2];
        memset(os, 0, sizeof os);
        py.gil_holder_tid = SOP_NA;
        py.gc_enabled = py.gc_collecting = py.gc_frozen = SOP_NA;
        for (int g = 0; g < 3; g++)
            py.gc_threshold[g] = py.gc_count[g] = py.gc_collections[g] = SOP_NA;
        if (v == 1) {
            strcpy(py.version, "3.11.2");
            strcpy(py.executable, "/usr/bin/python3\xe2");
            strcpy(py.libpython, "/usr/lib/libpython3.11.so");
            strcpy(py.layout, "table 3.11");
            py.gil_holder_tid = 100;
            py.finalizing = true;
            py.gc_enabled = 1;
            py.gc_collecting = 0;
            py.gc_frozen = 3;
            for (int g = 0; g < 3; g++) {
                py.gc_threshold[g] = 700 - g;
                py.gc_count[g] = g;
                py.gc_collections[g] = 10 * g;
            }
            py.walk_retries = 4;
            py.threads_partial = 1;
            py.threads = th;
            py.nthreads = 4;
            th[0] = (sop_pythread){.tid = 100,
                                   .thread_id = 140000000000ull,
                                   .interp_id = 0,
                                   .active = true,
                                   .os_state = 'R',
                                   .gil = true};
            strcpy(th[0].name, "MainThread");
            th[0].frames = frames_a;
            th[0].nframes = 2;
            th[0].truncated = true;
            th[0].walk_retries = 2;
            th[0].stopped = true;
            th[0].pause_ms = 1.5;
            th[1] = (sop_pythread){.tid = 0,
                                   .interp_id = -1,
                                   .os_state = '?',
                                   .name_from_comm = true,
                                   .tid_from_stack = true};
            strcpy(th[1].name, "bad\xff");
            th[1].partial = true;
            strcpy(th[1].partial_reason, "chain changed\xc3");
            th[2] =
                (sop_pythread){.tid = 102, .interp_id = 2, .tid_from_stack = true, .os_state = 'S'};
            th[2].frames = frames_a;
            th[2].nframes = 2;
            th[2].native = native_a;
            th[2].nnative = 3;
            th[2].pause_ms = 0.25;
            th[2].stopped = true;
            th[3] = (sop_pythread){.tid = 103, .interp_id = 0, .os_state = 'D'};
            strcpy(th[3].native_error, "ptrace: EPERM");
            py.others = os;
            py.nothers = 2;
            os[0] = (sop_ostask){.tid = 200, .os_state = 'R'};
            strcpy(os[0].name, "cuda\xff");
            os[0].native = native_o;
            os[0].nnative = 1;
            os[0].pause_ms = 0.5;
            os[1] = (sop_ostask){.tid = 201, .os_state = '?'};
            strcpy(os[1].native_error, "gone");
        }
        if (v == 2) {
            strcpy(py.version, "3.12.1");
            py.gc_threshold[0] = 1; /* the arrays: set as a whole */
            py.gc_count[0] = 2;
        }
        sop_value *ev = sop__v_obj();
        sop__bridge_python(ev, &py);
        out_json(ev);
        out_json(sop__bridge_python_others(&py));
    }
    sop_value *ev = sop__v_obj();
    sop__bridge_python(ev, NULL);
    out_json(ev);
}

/* ---- python.heap ---- */

static void heap_cases(void)
{
    static sop_heap_type ta[3], tb[3];
    static sop_pyheap a, b;
    for (int v = 0; v < 4; v++) {
        memset(&a, 0, sizeof a);
        memset(&b, 0, sizeof b);
        memset(ta, 0, sizeof ta);
        memset(tb, 0, sizeof tb);
        strcpy(a.version, "3.11.2");
        a.complete = v != 1;
        strcpy(a.partial, "gen2 stopped\xff");
        a.objects = 1000;
        a.bytes = 2 << 20;
        a.untracked = 40;
        a.gc_enabled = v == 2 ? SOP_NA : 1;
        a.census_ms = 12.5;
        a.types = ta;
        a.ntypes = 3;
        strcpy(ta[0].name, "dict");
        ta[0].count = 10, ta[0].bytes = 1000, ta[0].frozen = 2;
        strcpy(ta[1].name, "str\xc3");
        ta[1].count = 5, ta[1].bytes = 500, ta[1].untracked = true;
        strcpy(ta[2].name, "list");
        ta[2].count = 1, ta[2].bytes = 100;
        for (int g = 0; g < SOP_HEAP_LISTS; g++) {
            a.list_objects[g] = (uint64_t)g * 10;
            a.list_complete[g] = g != 2;
        }
        if (v == 3) {
            a.numpy_seen = true;
            a.numpy_arrays = 2;
            a.numpy_nbytes = 4096;
            a.stopped = true;
            a.pause_ms = 3;
            a.restarts = 1;
        }
        b = a;
        b.types = tb;
        memcpy(tb, ta, sizeof tb);
        b.complete = v != 2;
        strcpy(b.partial, "second");
        b.objects = 1500;
        b.bytes = 3 << 20;
        b.numpy_nbytes = 8192;
        b.census_ms = 10;
        b.pause_ms = 5;
        tb[0].count = 30, tb[0].bytes = 4000;
        sop_value *one = sop__bridge_heap(&a, NULL, 0, v == 0 ? SOP_NA : 8192, SOP_NA, 2);
        out_json(one);
        sop_value *two = sop__bridge_heap(&a, &b, 2.5, v == 1 ? SOP_NA : 8192, 8192 + v * 512, 2);
        out_json(two);
    }
    /* one census, stopped, no measurable pause: pause_ms 0 (it used to read the absent
     * second census) */
    memset(&a, 0, sizeof a);
    a.complete = true;
    a.gc_enabled = SOP_NA;
    a.stopped = true;
    out_json(sop__bridge_heap(&a, NULL, 0, SOP_NA, SOP_NA, 2));
}

/* ---- window: sampling, io_files, python's window parts ---- */

static sop_pysample mk(int tid, const sop_pyframe *frames, size_t n, char state, bool gil)
{
    sop_pysample p;
    memset(&p, 0, sizeof p);
    p.tid = tid;
    p.name = "";
    p.state = state;
    p.gil = gil;
    p.majflt = p.minflt = SOP_NA;
    p.frames = frames;
    p.nframes = n;
    return p;
}

static void window_cases(void)
{
    const char *evp = "/usr/lib/python3.11/asyncio/events.py";
    const char *be = "/usr/lib/python3.11/asyncio/base_events.py";
    sop_pyframe in_cb[4] = {
        {"handler", "/app/srv.py", 5, false, 0},
        {"Handle._run", evp, 80, false, 0},
        {"BaseEventLoop._run_once", be, 1900, false, 0},
        {"BaseEventLoop.run_forever", be, 600, false, 0},
    };
    sop_pyframe in_sel[3] = {
        {"EpollSelector.select", "/usr/lib/python3.11/selectors.py", 468, false, 0},
        {"BaseEventLoop._run_once", be, 1880, false, 0},
        {"BaseEventLoop.run_forever", be, 600, false, 0},
    };
    sop_pyframe lib[3] = {
        {"JSONEncoder.encode", "/usr/lib/python3.11/json/encoder.py", 200, false, 0},
        {"dumps", "/usr/lib/python3.11/json/__init__.py", 231, false, 0},
        {"main\xff", "/app/train.py", 9, false, 0},
    };
    sop_pyframe logf[2] = {
        {"Logger.info", "/usr/lib/python3.11/logging/__init__.py", 1400, false, 0},
        {"main\xff", "/app/train.py", 10, false, 0},
    };
    sop_pyframe wf[1] = {{"load", "/app/data.py", 42, false, 0}};
    for (int v = 0; v < 3; v++) {
        sop_agg *a = sop__agg_new();
        CHECK(a != NULL);
        if (!a)
            return;
        sop__agg_start(a, 0);
        double now = 0;
        if (v >= 1) {
            int ml = sop__agg_add_thread(a, 0, 100, "MainThread");
            int lp = sop__agg_add_thread(a, 0, 101, "loop");
            for (int c = 0; c < 4; c++) {
                sop_pysample p = mk(100, c < 3 ? lib : logf, c < 3 ? 3 : 2, c ? 'R' : 'S', c);
                sop__agg_sample(a, ml, &p, now += 10);
            }
            for (int c = 0; c < 3; c++) {
                sop_pysample p = mk(101, in_cb, 4, 'R', true);
                sop__agg_sample(a, lp, &p, now += 10);
            }
            sop_pysample p = mk(101, in_sel, 3, 'S', false);
            sop__agg_sample(a, lp, &p, now += 10);
            const int64_t coll[4] = {0, 1, 1, 0};
            for (int c = 0; c < 4; c++) {
                sop_pygc g = {coll[c], {10 + c, 2, 1}, SOP_NA, SOP_NA};
                sop__agg_gc(a, &g, 10.0 * c);
            }
        }
        if (v == 2) {
            int wk = sop__agg_add_thread(a, 1, 200, "worker");
            const char states[4] = {'R', 'R', 'D', 'S'};
            for (int c = 0; c < 4; c++) {
                sop_pysample p = mk(200, wf, 1, states[c], false);
                p.majflt = c < 2 ? 5 : 9;
                p.minflt = c < 2 ? 1000 + c : 1200 + c; /* 201 new pages before the 3rd */
                sop__agg_sample(a, wk, &p, now += 10);
            }
        }
        sop__agg_finish(a, now + 10);

        sop_io io0, io1;
        memset(&io0, 0, sizeof io0);
        memset(&io1, 0, sizeof io1);
        io0.read_bytes = 0, io1.read_bytes = 4096;
        io0.write_bytes = SOP_NA, io1.write_bytes = 10;
        io0.rchar = 100, io1.rchar = 1100, io0.syscr = 1, io1.syscr = 11;
        io0.wchar = 0, io1.wchar = 0, io0.syscw = 5, io1.syscw = 5;
        sop_window_proc procs[2] = {
            {100, "python3", "python3 train.py", false, 1000.0, 1010.0, NULL, NULL},
            {200, "pt_data_worker", v == 2 ? "python3 train.py" : "x", true, 1005.0, 1010.0, &io0,
             &io1},
        };
        sop_open_file files[2];
        memset(files, 0, sizeof files);
        files[0] = (sop_open_file){.pid = 100, .fd = 3, .size = 1 << 20, .pos = 4096, .pos0 = 0};
        strcpy(files[0].path, "/data/a\xff.bin");
        strcpy(files[0].mountpoint, "/data");
        strcpy(files[0].fstype, "ext4");
        strcpy(files[0].source, "/dev/sda1");
        strcpy(files[0].disk, "sda");
        files[1] = (sop_open_file){.pid = 200, .fd = 7, .size = 0, .pos = SOP_NA, .pos0 = SOP_NA};
        strcpy(files[1].path, "/tmp/x");
        sop_window w = {0};
        w.agg = a;
        w.procs = procs;
        w.nprocs = v == 2 ? 2 : 1;
        w.files = files;
        w.nfiles = v == 0 ? 0 : 2;
        w.stats = (sop_sampler_stats){.ticks = 8,
                                      .missed = 1,
                                      .thread_samples = a->thread_samples,
                                      .samples_partial = 0,
                                      .walk_retries = 3,
                                      .rate_hz = 100,
                                      .self_cpu_ms = 2.5,
                                      .window_s = v == 1 ? 0 : 2};
        w.proc_root = "/nonexistent-sop-root";

        sop_value *ev = sop__v_obj();
        if (v >= 1) { /* what the other bridges wrote before */
            sop__v_set_int(ev, "effective_cpus", 4);
            sop_value *host = sop__v_obj_at(ev, "host");
            sop_value *disks = sop__v_arr_at(host, "disks");
            sop_value *d = sop__v_obj();
            sop__v_set_str(d, "name", "sda");
            sop__v_set_dbl(d, "util_pct", 50);
            sop__v_set_dbl(d, "read_kb_per_s", 100);
            sop__v_push(disks, d);
            sop_value *kids = sop__v_arr_at(ev, "children");
            sop_value *k = sop__v_obj();
            sop__v_set_int(k, "pid", 200);
            sop__v_set_dbl(k, "cpu_pct", 80);
            sop__v_set_dbl(k, "rchar_per_s", 500);
            sop_value *env = sop__v_obj_at(k, "env");
            sop__v_set_str(env, "OMP_NUM_THREADS", "1");
            sop__v_push(kids, k);
            sop_value *py = sop__v_obj_at(ev, "python");
            sop_value *ths = sop__v_arr_at(py, "threads");
            int tids[3] = {100, 101, 999};
            for (int i = 0; i < 3; i++) {
                sop_value *t = sop__v_obj();
                sop__v_set_int(t, "tid", tids[i]);
                sop__v_push(ths, t);
            }
            sop__v_push(ths, sop__v_obj()); /* no tid: no window */
        }
        sop__bridge_window(ev, &w);
        out_json(ev);
        sop__agg_free(a);
    }
}

/* ---- rank (engine/bridge/rank_identity.c): node is this host's name, replaced for the comparison
 * ---- */

static void rank_cases(void)
{
    static const char *const envs[][6] = {
        {NULL},
        {"PATH", "/bin", NULL},
        {"RANK", "3", "LOCAL_RANK", "1", "WORLD_SIZE", "8"},
        {"SLURM_PROCID", "2", "SLURM_NTASKS", "x", "SLURM_JOB_ID", "77"},
        {"TORCHELASTIC_RUN_ID", "none", "LOCAL_RANK", "0", NULL},
        {"TORCHELASTIC_RUN_ID", "abc", NULL},
    };
    struct utsname u;
    CHECK(uname(&u) == 0);
    for (size_t v = 0; v < sizeof envs / sizeof envs[0]; v++) {
        sop_value *ev = sop__v_obj();
        if (v > 0) {
            sop_value *env = sop__v_obj_at(sop__v_obj_at(ev, "proc"), "env");
            for (int i = 0; i < 6 && envs[v][i]; i += 2)
                sop__v_set_str(env, envs[v][i], envs[v][i + 1]);
        }
        sop__rank_identity(ev);
        sop_value *r = (sop_value *)sop__v_get(ev, "rank");
        for (sop_value *m = r ? r->child : NULL; m; m = m->next)
            if (m->key && strcmp(m->key, "node") == 0 && m->type == SOP_V_STR) {
                CHECK_EQ_S(m->str, u.nodename);
                free(m->str);
                m->str = strdup("NODE");
            }
        out_json(ev);
    }
}

int main(void)
{
    const char *pm = getenv("SOP_GOLDEN_PRINT");
    print_mode = pm && pm[0] == '1';
    sched_cases();
    python_cases();
    heap_cases();
    window_cases();
    rank_cases();
    if (print_mode)
        return 0;
    CHECK_EQ_I(seen, sizeof expected / sizeof expected[0]);
    return t_done();
}
