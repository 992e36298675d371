import HTTP

extension ListService {
    /// Every route of the contract. HEAD is answered wherever GET is (the
    /// router falls back to the GET route and the server drops the body).
    static func routeTable() -> Router<Route> {
        var router = Router<Route>()
        func add(_ method: HTTPMethod, _ pattern: String, _ access: AccessPolicy.Access?, _ action: Route.Action) {
            router.add(method, pattern, Route(access: access, action: action))
        }
        add(.get, "/healthz", nil, .sync { service, context in service.health(context) })
        add(.get, "/metrics", .read, .sync { service, context in try service.metricsText(context) })

        add(.get, "/lists", .read, .async { service, context in try await service.listLists(context) })
        add(.post, "/lists", .write, .async { service, context in try await service.createList(context) })
        add(
            .get, "/lists/{list}", .read, .custom { service, context, responder in service.getList(context, responder) }
        )
        add(.put, "/lists/{list}", .write, .async { service, context in try await service.replaceList(context) })
        add(.patch, "/lists/{list}", .write, .async { service, context in try await service.patchList(context) })
        add(.delete, "/lists/{list}", .write, .async { service, context in try await service.deleteList(context) })

        add(
            .get, "/lists/{list}/sections", .read,
            .async { service, context in try await service.listSections(context) })
        add(
            .post, "/lists/{list}/sections", .write,
            .async { service, context in try await service.createSection(context) })
        add(
            .get, "/lists/{list}/sections/{section}", .read,
            .async { service, context in try await service.getSection(context) })
        add(
            .put, "/lists/{list}/sections/{section}", .write,
            .async { service, context in try await service.replaceSection(context) })
        add(
            .patch, "/lists/{list}/sections/{section}", .write,
            .async { service, context in try await service.patchSection(context) })
        add(
            .delete, "/lists/{list}/sections/{section}", .write,
            .async { service, context in try await service.deleteSection(context) })

        add(
            .get, "/lists/{list}/sections/{section}/items", .read,
            .async { service, context in try await service.listSectionItems(context) })
        add(
            .post, "/lists/{list}/sections/{section}/items", .write,
            .async { service, context in try await service.createItem(context) })
        add(.get, "/lists/{list}/items", .read, .async { service, context in try await service.queryItems(context) })
        add(.get, "/lists/{list}/indexes", .read, .async { service, context in try await service.listIndexes(context) })
        add(
            .put, "/lists/{list}/indexes/{path}", .write,
            .async { service, context in try await service.putIndex(context) })
        add(
            .delete, "/lists/{list}/indexes/{path}", .write,
            .async { service, context in try await service.deleteIndex(context) })
        add(
            .put, "/lists/{list}/text-index", .write,
            .async { service, context in try await service.putTextIndex(context) })
        add(
            .delete, "/lists/{list}/text-index", .write,
            .async { service, context in try await service.deleteTextIndex(context) })
        add(
            .get, "/lists/{list}/items/{item}", .read, .async { service, context in try await service.getItem(context) }
        )
        add(
            .put, "/lists/{list}/items/{item}", .write,
            .async { service, context in try await service.replaceItem(context) })
        add(
            .patch, "/lists/{list}/items/{item}", .write,
            .async { service, context in try await service.patchItem(context) })
        add(
            .delete, "/lists/{list}/items/{item}", .write,
            .async { service, context in try await service.deleteItem(context) })

        add(
            .get, "/lists/{list}/changes", .read,
            .custom { service, context, responder in service.changes(context, responder) })
        add(
            .post, "/changes", .read,
            .custom { service, context, responder in service.changesOfMany(context, responder) })
        add(
            .get, "/lists/{list}/events", .read,
            .custom { service, context, responder in service.events(context, responder) })
        add(.get, "/events", .read, .custom { service, context, responder in service.eventsOfMany(context, responder) })

        // The inspector: static files, open to all (they hold no data; the page asks for a token).
        add(.get, "/", nil, .sync { service, context in service.inspectorFile(context, name: "index.html") })
        add(.get, "/ui", nil, .sync { service, context in service.inspectorFile(context, name: "index.html") })
        add(.get, "/ui/", nil, .sync { service, context in service.inspectorFile(context, name: "index.html") })
        add(.get, "/ui/{file}", nil, .sync { service, context in service.inspectorFile(context) })
        return router
    }
}
