import Foundation

#if os(Linux)
    import CSystem
#endif

/// Names the calling thread for `top -H`, `perf`, `/proc/PID/task/*/comm` and
/// debuggers (Linux keeps at most 15 bytes).
///
/// Call it first thing in a thread's body. Not `Thread.current.name = …`:
/// Foundation on Linux applies that name only once `Thread.start()` has
/// stored the new thread's handle, which races with the body itself, so a
/// thread that starts quickly kept its default name (seen as a missing
/// `store-writer` and `store-catchup` in benchmark runs).
package func nameCurrentThread(_ name: String) {
    #if os(Linux)
        csystem_set_thread_name(name)
    #else
        Thread.current.name = name
    #endif
}
