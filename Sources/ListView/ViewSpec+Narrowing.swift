extension ViewSpec {
    /// This view narrowed by a client's own view parameters, or why they would widen it.
    ///
    /// A signed token's `view` is forced on every read it makes (docs/API.md,
    /// "Auth"); the client may add to it but never see more than it lets
    /// through:
    /// - `where` conditions add up (every one must hold), and so does `q`
    ///   where both give the same text (a second, different `q` is refused:
    ///   a view holds one);
    /// - without a window (`limit`), `order` and `group` only arrange what the
    ///   view lets through, so the client may set those it does not;
    /// - with a window, anything but a smaller `limit` would choose other
    ///   members (another filter or order picks other top items), so the
    ///   client may only repeat what it says and shrink the window.
    ///
    /// - Returns: the narrowed view, or a sentence for the client saying which
    ///   parameter would widen this one.
    public func narrowed(by client: ViewSpec) -> Result<ViewSpec, NarrowingRefusal> {
        if client.isWholeList { return .success(self) }
        if let limit {
            if !Set(client.conditions).isSubset(of: Set(conditions)) {
                return .failure(
                    .init("where: this view has a window (limit=\(limit)); another filter would choose other items"))
            }
            if client.text != nil, client.text != text {
                return .failure(
                    .init("q: this view has a window (limit=\(limit)); another filter would choose other items"))
            }
            if client.order != nil, client.order != order {
                return .failure(
                    .init("order: this view has a window (limit=\(limit)); another order would choose other items"))
            }
            if let clientGroup = client.group, !(group.map { Self.samePath($0, clientGroup) } ?? false) {
                return .failure(
                    .init("group: this view has a window (limit=\(limit)); another grouping would choose other items"))
            }
            return .success(
                ViewSpec(
                    checked: conditions, text: text, order: order, group: group,
                    limit: Swift.min(limit, client.limit ?? limit)))
        }
        if let text, let clientText = client.text, !text.utf8.elementsEqual(clientText.utf8) {
            return .failure(.init("q: this view already searches for another text; a view holds one q"))
        }
        if let order, let clientOrder = client.order, order != clientOrder {
            return .failure(.init("order: this view has its own order"))
        }
        if let group, let clientGroup = client.group, !Self.samePath(group, clientGroup) {
            return .failure(.init("group: this view has its own grouping"))
        }
        return .success(
            ViewSpec(
                checked: conditions + client.conditions, text: text ?? client.text, order: order ?? client.order,
                group: group ?? client.group, limit: client.limit))
    }

    /// Why a client's view parameters cannot narrow a forced view.
    public struct NarrowingRefusal: Error, Sendable, Equatable, CustomStringConvertible {
        /// The parameter at fault and why, fit for a problem's `detail`.
        public let reason: String

        init(_ reason: String) { self.reason = reason }

        public var description: String { reason }
    }
}
