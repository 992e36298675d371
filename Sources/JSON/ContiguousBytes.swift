/// Runs `body` over the bytes of `collection`, copying them only when they are not
/// already contiguous.
@inline(__always)
func withContiguousBytes<R>(
    _ collection: some Collection<UInt8>,
    _ body: (UnsafeBufferPointer<UInt8>) throws(JSONError) -> R
) throws(JSONError) -> R {
    if let result = collection.withContiguousStorageIfAvailable({ buffer in
        Result { () throws(JSONError) -> R in try body(buffer) }
    }) {
        return try result.get()
    }
    let copy = Array(collection)
    return try copy.withUnsafeBufferPointer { buffer in
        Result { () throws(JSONError) -> R in try body(buffer) }
    }.get()
}
