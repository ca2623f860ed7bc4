package httpapi

// handleWatch serves ?watch=1 streams.
func (s *Server) handleWatch(r *request) error {
	return s.writeError(r.c, errMethodNotAllowed())
}

// healthDetails lists store figures for /readyz?verbose.
func (s *Server) healthDetails() []string { return nil }
