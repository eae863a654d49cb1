//! What the tamper scan looks for, by name: the calls, attributes and modules through which a
//! sample reaches the frames, the heap, the tracer, raw descriptors, the harness or `sys`.

pub(super) const FRAME_CALLS: &[&str] = &[
    "sys._getframe",
    "sys._current_frames",
    "inspect.currentframe",
    "inspect.stack",
    "inspect.trace",
    "inspect.getouterframes",
    "inspect.getinnerframes",
    "traceback.walk_stack",
];
pub(super) const FRAME_ATTRS: &[&str] = &[
    "f_back",
    "f_locals",
    "f_globals",
    "f_builtins",
    "tb_frame",
    "gi_frame",
    "cr_frame",
    "ag_frame",
];
pub(super) const GC_CALLS: &[&str] = &["gc.get_objects", "gc.get_referrers", "gc.get_referents"];
/// Descriptor-level I/O: no task needs it, and it is how a sample would find the report pipes.
pub(super) const RAW_FD_CALLS: &[&str] = &[
    "os.read",
    "os.write",
    "os.readv",
    "os.writev",
    "os.pread",
    "os.pwrite",
    "os.preadv",
    "os.pwritev",
    "os.fstat",
    "os.fdopen",
    "os.dup",
    "os.dup2",
    "os.sendfile",
    "os.splice",
    "os.set_blocking",
    "os.get_blocking",
    "os.set_inheritable",
    "os.fchmod",
    "os.fchown",
    "os.ftruncate",
    "socket.fromfd",
    "fcntl.fcntl",
];
pub(super) const TRACE_CALLS: &[&str] = &[
    "sys.settrace",
    "sys.setprofile",
    "threading.settrace",
    "threading.setprofile",
    "threading.settrace_all_threads",
    "threading.setprofile_all_threads",
];
pub(super) const FUNCTION_ATTRS: &[&str] = &[
    "__code__",
    "__globals__",
    "__defaults__",
    "__kwdefaults__",
    "__closure__",
];
/// Modules the harness uses after the sample has started: patching them is tampering.
pub(super) const HARNESS_MODULES: &[&str] = &[
    "json",
    "os",
    "posix",
    "gc",
    "traceback",
    "inspect",
    "marshal",
    "signal",
    "time",
    "types",
    "importlib",
    "faulthandler",
    "select",
];
/// `sys` attributes the harness relies on (writing others, like `sys.stdout` or
/// `sys.executable`, is ordinary task code).
pub(super) const SYS_GUARDED: &[&str] = &[
    "modules",
    "exit",
    "exc_info",
    "excepthook",
    "displayhook",
    "settrace",
    "setprofile",
    "gettrace",
    "getprofile",
    "addaudithook",
    "audit",
    "setrecursionlimit",
];
