// The wire shapes (ListState, ChangeAnswer, JSONEntry) and the domain values
// (ListOperation, Identifier, Model, ListSummary) are part of the client's API:
// an app that imports ListClient gets them with it.
@_exported import ListModel
@_exported import ListWire
