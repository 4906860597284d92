package serve

// SlackAppConfig configures the slash command and interactions.
type SlackAppConfig struct{}

// registerSlackApp adds /slack/commands and /slack/interactions when
// configured.
func (s *Server) registerSlackApp() error { return nil }
