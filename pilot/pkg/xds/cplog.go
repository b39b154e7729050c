package xds

import (
	"context"
	"fmt"
	"log/slog"
)

// cpLogger adapts slog to go-control-plane's logger. go-control-plane logs
// ordinary protocol steps at warn ("not responding until every resource is
// named", "nonce is stale"), so its info and warn go to debug here; the
// events an operator needs (NACKs, invalid nodes, dropped resources) are
// logged by this package with context. Its errors stay errors.
type cpLogger struct{ l *slog.Logger }

func (c cpLogger) log(level slog.Level, format string, args []any) {
	if !c.l.Enabled(context.Background(), level) {
		return // skip formatting: go-control-plane logs every response at debug
	}
	c.l.Log(context.Background(), level, "go-control-plane: "+fmt.Sprintf(format, args...))
}

func (c cpLogger) Debugf(format string, args ...any) { c.log(slog.LevelDebug, format, args) }
func (c cpLogger) Infof(format string, args ...any)  { c.log(slog.LevelDebug, format, args) }
func (c cpLogger) Warnf(format string, args ...any)  { c.log(slog.LevelDebug, format, args) }
func (c cpLogger) Errorf(format string, args ...any) { c.log(slog.LevelError, format, args) }
