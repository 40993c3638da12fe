package stack

// NoWebSocket is an app that cannot hold a WebSocket: WhyNoWebSocket says
// why, for a refusal.
type NoWebSocket interface {
	WhyNoWebSocket() string
}

// HoldsWebSocket reports whether the app that runs model on s can hold a
// WebSocket, and why not when it cannot (also when s runs no such model).
func (s Stack) HoldsWebSocket(model string) (bool, string) {
	a, err := s.app(model)
	if err != nil {
		return false, err.Error()
	}
	if n, ok := a.(NoWebSocket); ok {
		return false, n.WhyNoWebSocket()
	}
	return true, ""
}
