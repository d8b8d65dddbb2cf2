# sop — Python binding of libsop (ctypes): diagnose this process or another one in-process,
# without shelling out to sopctl. Depends on libsop.so only (found through SOP_LIBRARY, next to
# this package, the directory cmake --install recorded in _paths.py, or the loader's path).
"""Python-side performance triage from inside a Python program.

    import sop
    report = sop.diagnose()                 # this process, 1 s window, dict (JSON report)
    text = sop.diagnose(pid, format="md")   # another process, Markdown table
    stacks = sop.dump(pid)                  # every thread's Python stack (dict)

The calls release the GIL while the library works (ctypes does), so other threads keep running
and their stacks are part of a self-diagnosis. diagnose() blocks for `duration` seconds: from an
asyncio loop, run it in an executor, or use sop.Watch.
"""
import atexit
import ctypes
import ctypes.util
import json as _json
import os
import threading
import weakref

__all__ = ["SopError", "Engine", "Watch", "diagnose", "adiagnose", "dump", "heap", "version",
           "library_path"]

PROBES = {"threads": 0x01, "children": 0x02, "cgroup": 0x04, "host": 0x08, "kmsg": 0x10,
          "python": 0x20, "alloc": 0x40, "heap": 0x80}


class SopError(Exception):
    """A libsop call failed: .code is the SOP_E* value, the message says why."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class _CollectOpts(ctypes.Structure):
    _fields_ = [("duration_s", ctypes.c_double), ("python", ctypes.c_int),
                ("children", ctypes.c_int), ("kernel_log", ctypes.c_int),
                ("proc_root", ctypes.c_char_p), ("cgroup_root", ctypes.c_char_p),
                ("probes", ctypes.c_uint), ("reserved_flags", ctypes.c_uint),
                ("reserved", ctypes.c_void_p * 6)]


class _WatchEvent(ctypes.Structure):
    _fields_ = [("pid", ctypes.c_int), ("seq", ctypes.c_ulonglong), ("on_demand", ctypes.c_int),
                ("rc", ctypes.c_int), ("error", ctypes.c_char_p),
                ("evidence", ctypes.c_void_p), ("report", ctypes.c_void_p),
                ("run_ms", ctypes.c_double)]


class _WatchConfig(ctypes.Structure):
    _fields_ = [("pid", ctypes.c_int), ("interval_s", ctypes.c_double),
                ("collect", _CollectOpts), ("reserved", ctypes.c_void_p * 4)]


class _FormatInfo(ctypes.Structure):
    _fields_ = [("format", ctypes.c_int), ("name", ctypes.c_char_p), ("ext", ctypes.c_char_p),
                ("mime", ctypes.c_char_p), ("flags", ctypes.c_uint)]


_WATCH_FN = ctypes.CFUNCTYPE(None, ctypes.POINTER(_WatchEvent), ctypes.c_void_p)


def _candidates():
    env = os.environ.get("SOP_LIBRARY")
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, "libsop.so")
    try:
        from . import _paths  # written by cmake --install
        yield os.path.join(_paths.LIBDIR, "libsop.so")
    except ImportError:
        pass
    found = ctypes.util.find_library("sop")
    if found:
        yield found
    yield "libsop.so.0"


def _load():
    errors = []
    for path in _candidates():
        if os.path.sep in path and not os.path.exists(path):
            errors.append(f"{path}: not found")
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            errors.append(str(e))
    raise ImportError("libsop not found (set SOP_LIBRARY to the path of libsop.so): "
                      + "; ".join(errors))


_lib, _lib_path = _load()


def _fn(name, restype, *argtypes):
    f = getattr(_lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


_P = ctypes.c_void_p
_PP = ctypes.POINTER(ctypes.c_void_p)
_CP = ctypes.POINTER(ctypes.c_char_p)
_strerror = _fn("sop_strerror", ctypes.c_char_p, ctypes.c_int)
_version = _fn("sop_version", ctypes.c_char_p)
_free = _fn("sop_free", None, _P)
_engine_new = _fn("sop_engine_new", ctypes.c_int, _PP)
_engine_free = _fn("sop_engine_free", None, _P)
_last_error = _fn("sop_last_error", ctypes.c_char_p, _P)
_load_file = _fn("sop_load_rules_file", ctypes.c_int, _P, ctypes.c_char_p)
_load_string = _fn("sop_load_rules_string", ctypes.c_int, _P, ctypes.c_char_p, ctypes.c_char_p,
                   ctypes.c_size_t)
_load_default = _fn("sop_load_rules_default", ctypes.c_int, _P)
_load_site = _fn("sop_load_site_file", ctypes.c_int, _P, ctypes.c_char_p)
_rule_count = _fn("sop_rule_count", ctypes.c_size_t, _P)
_rule_id = _fn("sop_rule_id", ctypes.c_char_p, _P, ctypes.c_size_t)
_set_threshold = _fn("sop_set_threshold", ctypes.c_int, _P, ctypes.c_char_p, ctypes.c_char_p)
_opts_init = _fn("sop_collect_opts_init", None, ctypes.POINTER(_CollectOpts))
_diagnose = _fn("sop_diagnose", ctypes.c_int, _P, ctypes.c_int, ctypes.POINTER(_CollectOpts),
                ctypes.c_int, ctypes.c_char_p, _CP, ctypes.POINTER(ctypes.c_int))
_collect = _fn("sop_collect", ctypes.c_int, _P, ctypes.c_int, ctypes.POINTER(_CollectOpts), _PP)
_evidence_to_json = _fn("sop_evidence_to_json", ctypes.c_int, _P, ctypes.c_int, _CP)
_evidence_free = _fn("sop_evidence_free", None, _P)
_dump = _fn("sop_dump", ctypes.c_int, _P, ctypes.c_int, ctypes.c_uint, ctypes.c_int, _CP)
_heap = _fn("sop_heap", ctypes.c_int, _P, ctypes.c_int, ctypes.c_uint, ctypes.c_int,
             ctypes.c_double, ctypes.c_int, _CP)
_report_render = _fn("sop_report_render", ctypes.c_int, _P, ctypes.c_int, ctypes.c_char_p, _CP)
_format_at = _fn("sop_format_at", ctypes.POINTER(_FormatInfo), ctypes.c_size_t)


def _formats():
    """name -> sop_format value, from the library's format table (engine/api/format.c)."""
    out, i = {}, 0
    while True:
        row = _format_at(i)
        if not row:
            return out
        out[row.contents.name.decode()] = row.contents.format
        i += 1


# The formats the library renders ("md", "json", "text", "html", ...), read from its table.
FORMATS = _formats()
_watch_config_init = _fn("sop_watch_config_init", None, ctypes.POINTER(_WatchConfig))
_watch_new = _fn("sop_watch_new", ctypes.c_int, _P, ctypes.POINTER(_WatchConfig), _WATCH_FN, _P,
                 _PP)
_watch_trigger = _fn("sop_watch_trigger", ctypes.c_int, _P)
_watch_runs = _fn("sop_watch_runs", ctypes.c_ulonglong, _P)
_watch_free = _fn("sop_watch_free", None, _P)
_watch_openmetrics = _fn("sop_watch_openmetrics", ctypes.c_int, _P, _CP)


def version():
    """The libsop version string, e.g. "0.1.0"."""
    return _version().decode()


def library_path():
    """The libsop.so this module loaded."""
    return _lib_path


def _take_string(ptr):
    """Copy a char* the library returned and free it."""
    try:
        return ctypes.string_at(ptr).decode("utf-8", "replace") if ptr else ""
    finally:
        _free(ptr)


def _opts(duration, probes):
    o = _CollectOpts()
    _opts_init(ctypes.byref(o))
    o.duration_s = float(duration)
    if probes is not None:
        mask = 0
        for p in probes:
            if p not in PROBES:
                raise ValueError(f"unknown probe {p!r} (known: {', '.join(PROBES)})")
            mask |= PROBES[p]
        o.probes = mask
    return o


def _format(fmt):
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    return FORMATS[fmt]


class Engine:
    """One libsop engine: loaded rules and thresholds. Use one Engine per thread at a time
    (separate Engines run in parallel). Close it, or use it as a context manager."""

    def __init__(self, rules=None, site=None, thresholds=None):
        h = ctypes.c_void_p()
        rc = _engine_new(ctypes.byref(h))
        if rc:
            raise SopError(rc, _strerror(rc).decode())
        self._h = h
        try:
            if rules is None:
                self._check(_load_default(self._h))
            elif "\n" in rules and not os.path.exists(rules):
                src = rules.encode()
                self._check(_load_string(self._h, b"rules", src, len(src)))
            else:
                self._check(_load_file(self._h, os.fsencode(rules)))
            if site is not None:
                self._check(_load_site(self._h, os.fsencode(site)))
            for k, v in (thresholds or {}).items():
                if isinstance(v, bool):
                    v = "true" if v else "false"
                self._check(_set_threshold(self._h, str(k).encode(), str(v).encode()))
        except BaseException:
            self.close()
            raise

    def _check(self, rc):
        if rc:
            detail = _last_error(self._h).decode("utf-8", "replace") if self._h else ""
            raise SopError(rc, detail or _strerror(rc).decode())

    def close(self):
        h, self._h = getattr(self, "_h", None), None
        if h and _engine_free is not None:  # None during interpreter shutdown
            _engine_free(h)

    def _detach(self):
        """Hand the engine over to a Watch (which frees it)."""
        h, self._h = self._h, None
        return h

    __del__ = close

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def rule_ids(self):
        return [_rule_id(self._h, i).decode() for i in range(_rule_count(self._h))]

    def diagnose(self, pid=None, duration=1.0, format="json", lang="en", probes=None):
        """Collect evidence about pid (None: this process) over `duration` seconds, run the
        rules, return the report: a dict for format="json", else a str ("md" or "text")."""
        out = ctypes.c_char_p()
        problem = ctypes.c_int()
        o = _opts(duration, probes)
        rc = _diagnose(self._h, int(pid or 0), ctypes.byref(o), _format(format),
                       lang.encode(), ctypes.byref(out), ctypes.byref(problem))
        text = _take_string(ctypes.cast(out, ctypes.c_void_p).value)
        self._check(rc)
        return _json.loads(text) if format == "json" else text

    def evidence(self, pid=None, duration=1.0, probes=None):
        """The evidence the rules see (dict), as `sopctl evidence`."""
        ev = ctypes.c_void_p()
        o = _opts(duration, probes)
        self._check(_collect(self._h, int(pid or os.getpid()), ctypes.byref(o), ctypes.byref(ev)))
        try:
            out = ctypes.c_char_p()
            rc = _evidence_to_json(ev, 0, ctypes.byref(out))
            text = _take_string(ctypes.cast(out, ctypes.c_void_p).value)
            if rc:
                raise SopError(rc, _strerror(rc).decode())
            return _json.loads(text)
        finally:
            _evidence_free(ev)


def diagnose(pid=None, duration=1.0, format="json", lang="en", rules=None, site=None,
             thresholds=None, probes=None):
    """Diagnose `pid` (None: this process) with the default rules (or `rules`, a file path or
    Lua source). Returns the report: dict for format="json", str for "md" / "text"."""
    with Engine(rules=rules, site=site, thresholds=thresholds) as e:
        return e.diagnose(pid=pid, duration=duration, format=format, lang=lang, probes=probes)


async def adiagnose(pid=None, **kwargs):
    """diagnose() for asyncio code: runs in the loop's default executor, so the event loop
    keeps serving during the window (and is seen doing so in a self-diagnosis)."""
    import asyncio
    import functools
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(None, functools.partial(diagnose, pid, **kwargs))


def dump(pid=None, format="json"):
    """Every thread's Python stack of pid (None: this process): dict for "json", else text."""
    out = ctypes.c_char_p()
    rc = _dump(None, int(pid or os.getpid()), 0, _format(format), ctypes.byref(out))
    text = _take_string(ctypes.cast(out, ctypes.c_void_p).value)
    if rc:
        raise SopError(rc, _strerror(rc).decode() + (": " + text if text else ""))
    return _json.loads(text) if format == "json" else text


def heap(pid=None, top=20, duration=0.0, stop=False, format="json"):
    """A census of pid's Python objects by type (docs/heap.md; None: this process, never with
    stop): dict (ev.python.heap plus pid) for "json", else text. duration > 0: two censuses
    that far apart and the growth per type; stop: the target is stopped for the census."""
    out = ctypes.c_char_p()
    rc = _heap(None, int(pid or os.getpid()), 1 if stop else 0, int(top), float(duration),
               _format(format), ctypes.byref(out))
    text = _take_string(ctypes.cast(out, ctypes.c_void_p).value)
    if rc:
        raise SopError(rc, _strerror(rc).decode() + (": " + text if text else ""))
    return _json.loads(text) if format == "json" else text


class Watch:
    """Diagnose pid (None: this process) every `interval` seconds (0: only on trigger()) on a
    thread of libsop's own; `callback(report, event)` runs on that thread with the rendered
    report (dict for format="json") and event = {"pid", "seq", "on_demand", "rc", "error",
    "run_ms"}; report is None when the run failed. stop() (or the context manager) joins it."""

    def __init__(self, callback, pid=None, interval=0.0, duration=1.0, format="json",
                 lang="en", rules=None, site=None, thresholds=None, probes=None):
        self._callback = callback
        self._format, self._lang = format, lang
        _format(format)
        engine = Engine(rules=rules, site=site, thresholds=thresholds)
        cfg = _WatchConfig()
        _watch_config_init(ctypes.byref(cfg))
        cfg.pid = int(pid or 0)
        cfg.interval_s = float(interval)
        cfg.collect = _opts(duration, probes)
        self._cfn = _WATCH_FN(self._on_event)  # kept alive as long as the watch
        self._lock = threading.Lock()
        h = ctypes.c_void_p()
        rc = _watch_new(engine._detach(), ctypes.byref(cfg), self._cfn, None, ctypes.byref(h))
        if rc:
            raise SopError(rc, _strerror(rc).decode())
        self._h = h
        _live_watches.add(self)

    def _on_event(self, evp, _user):
        ev = evp.contents
        event = {"pid": ev.pid, "seq": ev.seq, "on_demand": bool(ev.on_demand), "rc": ev.rc,
                 "error": (ev.error or b"").decode("utf-8", "replace"), "run_ms": ev.run_ms}
        report = None
        if ev.rc == 0 and ev.report:
            out = ctypes.c_char_p()
            rc = _report_render(ev.report, FORMATS[self._format], self._lang.encode(),
                                ctypes.byref(out))
            text = _take_string(ctypes.cast(out, ctypes.c_void_p).value)
            if rc == 0:
                report = _json.loads(text) if self._format == "json" else text
        try:
            self._callback(report, event)
        except Exception:  # an exception cannot cross into C: report it the Python way
            import sys
            import traceback
            traceback.print_exc(file=sys.stderr)

    def trigger(self):
        """Ask for a run now (does not wait)."""
        with self._lock:  # never on a handle stop() is freeing
            if self._h:
                _watch_trigger(self._h)

    @property
    def runs(self):
        with self._lock:
            return _watch_runs(self._h) if self._h else 0

    def openmetrics(self):
        """The last successful run as OpenMetrics families (docs/metrics.md), without the closing
        "# EOF": text to append to a /metrics the program already serves ("" once stopped)."""
        with self._lock:
            if not self._h:
                return ""
            out = ctypes.c_char_p()
            rc = _watch_openmetrics(self._h, ctypes.byref(out))
        text = _take_string(ctypes.cast(out, ctypes.c_void_p).value)
        if rc:
            raise SopError(rc, _strerror(rc).decode())
        return text

    def stop(self):
        """Stop and join the watch thread (waits for a run in progress)."""
        lock = getattr(self, "_lock", None)
        if lock is None:
            return
        with lock:
            h, self._h = getattr(self, "_h", None), None
        if h and _watch_free is not None:
            _watch_free(h)

    __del__ = stop

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


# Watches still running at exit are stopped before the interpreter goes away (their thread
# calls back into Python).
_live_watches = weakref.WeakSet()


@atexit.register
def _stop_watches():
    for w in list(_live_watches):
        w.stop()


def _forget_watches_in_child():
    """After fork() the watches' threads stay in the parent: the child's Watch objects are
    inert (stop() is a no-op, runs is 0), so its exit never joins a thread it does not have."""
    for w in list(_live_watches):
        w._lock = threading.Lock()  # the parent's may have been copied held
        w._h = None
    _live_watches.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_watches_in_child)
