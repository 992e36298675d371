// The wire shapes (ListState, ChangeAnswer, ListOperation, JSONEntry) are part
// of the client's API: an app that imports ListClient gets them with it.
@_exported import ListWire
