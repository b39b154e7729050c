package generated

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// Watches are the informer handlers of one source. A watch the API server
// refuses (RBAC) is reported once, counted as synced (treated as empty) so
// the first push does not wait for it, and listed by Denied until the
// informer, which keeps retrying, syncs once access is granted.
type Watches struct {
	// Name prefixes registration errors ("ingress", "gateway").
	Name string
	Log  *slog.Logger

	mu   sync.Mutex
	regs []registration
}

// registration is one informer handler, and whether the API server
// refused the watch.
type registration struct {
	what   string
	reg    cache.ResourceEventHandlerRegistration
	denied *atomic.Bool
}

// Register adds h to inf; what names the watch in logs and errors
// ("Ingresses in namespace a").
func (w *Watches) Register(what string, inf cache.SharedIndexInformer, h cache.ResourceEventHandler) error {
	log := w.Log
	if log == nil {
		log = slog.Default()
	}
	denied := &atomic.Bool{}
	if err := inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
		if apierrors.IsForbidden(err) {
			if !denied.Swap(true) {
				log.Error("watch forbidden by RBAC; treated as empty", "watch", what, "error", err)
			}
			return
		}
		log.Warn("watch failed; retrying", "watch", what, "error", err)
	}); err != nil {
		return fmt.Errorf("%s: %s: %w", w.Name, what, err)
	}
	reg, err := inf.AddEventHandler(h)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", w.Name, what, err)
	}
	w.mu.Lock()
	w.regs = append(w.regs, registration{what: what, reg: reg, denied: denied})
	w.mu.Unlock()
	return nil
}

// Synced reports whether every watch has synced or been refused.
func (w *Watches) Synced() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.regs {
		if !r.reg.HasSynced() && !r.denied.Load() {
			return false
		}
	}
	return true
}

// syncPoll is how often WaitSynced checks the informers.
const syncPoll = 20 * time.Millisecond

// WaitSynced polls Synced on clk until it is true (and returns true) or
// ctx is cancelled (false).
func (w *Watches) WaitSynced(ctx context.Context, clk clock.WithTicker) bool {
	t := clk.NewTicker(syncPoll)
	defer t.Stop()
	for !w.Synced() {
		select {
		case <-ctx.Done():
			return false
		case <-t.C():
		}
	}
	return true
}

// Denied returns one error for every watch refused and not synced since.
func (w *Watches) Denied() []*config.Error {
	w.mu.Lock()
	regs := slices.Clone(w.regs)
	w.mu.Unlock()
	var out []*config.Error
	for _, r := range regs {
		if r.denied.Load() && !r.reg.HasSynced() {
			out = append(out, &config.Error{Source: "Kubernetes watch of " + r.what,
				Message: "forbidden by RBAC; treated as empty until access is granted"})
		}
	}
	return out
}

// ConfigErrors returns the Set's conversion errors and the refused
// watches, sorted by source (stable: conversion order within a source).
func ConfigErrors(s *Set, w *Watches) []*config.Error {
	out := append(s.Errors(), w.Denied()...)
	slices.SortStableFunc(out, func(a, b *config.Error) int { return cmp.Compare(a.Source, b.Source) })
	return out
}

// OnAny calls f on every add, update and delete.
func OnAny(f func()) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { f() },
		UpdateFunc: func(any, any) { f() },
		DeleteFunc: func(any) { f() },
	}
}

// NamespaceName names a watched namespace ("" is all) in watch names.
func NamespaceName(ns string) string {
	if ns == "" {
		return "all namespaces"
	}
	return "namespace " + ns
}
