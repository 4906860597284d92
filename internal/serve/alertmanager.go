package serve

// AlertmanagerConfig configures the Alertmanager receiver.
type AlertmanagerConfig struct{}

// registerAlertmanager adds POST /alertmanager when configured.
func (s *Server) registerAlertmanager() error { return nil }
