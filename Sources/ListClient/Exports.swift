// The wire shapes (ListState, ChangeAnswer, JSONEntry), the domain values
// (ListOperation, Identifier, Model, ListSummary) and views (ViewSpec, which
// `follow(list:view:)` and `list(_:view:)` take) are part of the client's API:
// an app that imports ListClient gets them with it.
@_exported import ListModel
@_exported import ListView
@_exported import ListWire
