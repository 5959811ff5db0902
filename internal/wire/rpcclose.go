package wire

// ServiceEnded is the reason of the close (code 1012, service restart)
// that ends an RPC connection whose service ended, as a cluster leader's
// does with its term. Every request the connection took was answered
// before it: a request left without an answer was not taken, changed
// nothing, and may be sent again on a new connection, which reaches
// whoever serves now. Clients match the reason too, so that a 1012 from
// something else on the way (a proxy restarting) is not taken for it.
const ServiceEnded = "the service ended (a cluster leader's term ended); reconnect: requests left unanswered were not taken"
