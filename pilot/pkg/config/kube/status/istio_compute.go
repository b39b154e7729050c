package status

import (
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	analysisv1alpha1 "istio.io/api/analysis/v1alpha1"
	metav1alpha1 "istio.io/api/meta/v1alpha1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// Condition types written on Istio objects. Reconciled is Istio's: true
// once every gateway using the object holds its config ACKed. Valid is
// Wayfinder's: Istio's validationMessages carry only a code and a level,
// so the text of each problem, with its field, is in this condition's
// message.
const (
	ConditionReconciled = "Reconciled"
	ConditionValid      = "Valid"
	// ConditionPatched is Wayfinder's, on EnvoyFilters that apply to a
	// connected gateway: true when every patch changed what it matched,
	// false when one matched nothing, failed to validate or was withheld
	// after a rejection; the message says per patch.
	ConditionPatched = "Patched"
)

// maxListed bounds the problems spelled out in the Valid message; the
// validationMessages list all of them.
const maxListed = 5

// Compute returns the status an object of the given generation should
// carry for its state (nil state: no gateway uses it and it has no
// problem). Transition times are taken from prev when a condition keeps
// its status, so an unchanged state computes an equal status.
func Compute(st *model.ObjectState, generation int64, prev *metav1alpha1.IstioStatus, now time.Time) *metav1alpha1.IstioStatus {
	if st == nil {
		st = &model.ObjectState{}
	}
	rec := &metav1alpha1.IstioCondition{Type: ConditionReconciled, ObservedGeneration: generation}
	switch {
	case st.Nacked > 0:
		rec.Status, rec.Reason = "False", "Rejected"
		rec.Message = fmt.Sprintf("%d of %d gateways rejected the config this object produced: %s", st.Nacked, st.Gateways, st.FirstNack)
	case st.Gateways == 0:
		rec.Status, rec.Reason = "True", "NoGateways"
		rec.Message = "no connected gateway uses this object"
	case st.Acked < st.Gateways:
		rec.Status, rec.Reason = "False", "Pending"
		rec.Message = fmt.Sprintf("%d of %d gateways have ACKed the config this object produced", st.Acked, st.Gateways)
	default:
		rec.Status, rec.Reason = "True", "Reconciled"
		rec.Message = fmt.Sprintf("all %d gateways using this object have ACKed its config", st.Gateways)
	}
	valid := &metav1alpha1.IstioCondition{Type: ConditionValid, Status: "True", Reason: "Valid", ObservedGeneration: generation}
	var msgs []*analysisv1alpha1.AnalysisMessageBase
	var errs, warns []string
	for _, e := range st.Errors {
		msgs = append(msgs, Message(e))
		text := e.Message
		if e.Field != "" {
			text = e.Field + ": " + e.Message
		}
		if e.Warning {
			warns = append(warns, text)
		} else {
			errs = append(errs, text)
		}
	}
	switch {
	case len(errs) > 0:
		valid.Status, valid.Reason = "False", "Invalid"
		valid.Message = listed("error", errs) + listedSuffix(warns)
	case len(warns) > 0:
		valid.Reason = "Warnings"
		valid.Message = listed("warning", warns)
	default:
		valid.Message = "no problems found"
	}
	conds := []*metav1alpha1.IstioCondition{rec, valid}
	if p := patchedCondition(st.Patches, generation); p != nil {
		conds = append(conds, p)
	}
	out := &metav1alpha1.IstioStatus{
		Conditions:         conds,
		ValidationMessages: msgs,
		ObservedGeneration: generation,
	}
	for _, c := range out.Conditions {
		c.LastTransitionTime = timestamppb.New(now)
		if p := findCondition(prev, c.Type); p != nil && p.Status == c.Status && p.LastTransitionTime != nil {
			c.LastTransitionTime = p.LastTransitionTime
		}
	}
	return out
}

func listed(what string, items []string) string {
	n := len(items)
	shown := items[:min(n, maxListed)]
	s := fmt.Sprintf("%d %s", n, what)
	if n != 1 {
		s += "s"
	}
	s += ": " + strings.Join(shown, "; ")
	if n > maxListed {
		s += fmt.Sprintf("; and %d more", n-maxListed)
	}
	return s
}

func listedSuffix(warns []string) string {
	if len(warns) == 0 {
		return ""
	}
	return ". " + listed("warning", warns)
}

func findCondition(s *metav1alpha1.IstioStatus, typ string) *metav1alpha1.IstioCondition {
	if s == nil {
		return nil
	}
	for _, c := range s.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return nil
}

// Equal reports whether two statuses say the same, ignoring probe times.
func Equal(a, b *metav1alpha1.IstioStatus) bool {
	return proto.Equal(a, b)
}

// messageType is an analysis message type: Istio's where one fits.
type messageType struct{ code, name string }

var (
	referencedResourceNotFound = messageType{"IST0101", "ReferencedResourceNotFound"}
	schemaValidationError      = messageType{"IST0106", "SchemaValidationError"}
	conflictingHosts           = messageType{"IST0109", "ConflictingMeshGatewayVirtualServiceHosts"}
	unreachableRule            = messageType{"IST0130", "VirtualServiceUnreachableRule"}
	ineffectiveMatch           = messageType{"IST0131", "VirtualServiceIneffectiveMatch"}
	// translationWarning is Wayfinder's for warnings no Istio code fits.
	translationWarning = messageType{"WF0001", "TranslationWarning"}
)

// Message is the validation message for a config problem: its Istio code
// from the kind of problem the message states, ERROR or WARNING.
func Message(e *config.Error) *analysisv1alpha1.AnalysisMessageBase {
	t := classify(e)
	m := &analysisv1alpha1.AnalysisMessageBase{
		Type:  &analysisv1alpha1.AnalysisMessageBase_Type{Code: t.code, Name: t.name},
		Level: analysisv1alpha1.AnalysisMessageBase_ERROR,
	}
	if e.Warning {
		m.Level = analysisv1alpha1.AnalysisMessageBase_WARNING
	}
	if strings.HasPrefix(t.code, "IST") {
		m.DocumentationUrl = "https://istio.io/latest/docs/reference/config/analysis/" + strings.ToLower(t.code) + "/"
	}
	return m
}

func classify(e *config.Error) messageType {
	m := e.Message
	switch {
	case strings.Contains(m, "is also bound by VirtualService"):
		return conflictingHosts
	case strings.Contains(m, "has the same match conditions"):
		return ineffectiveMatch
	case strings.Contains(m, "never matches"):
		return unreachableRule
	case strings.Contains(m, "does not exist"), strings.Contains(m, "is not defined by any"),
		strings.Contains(m, "no service is defined for host"), strings.Contains(m, "has no port"):
		return referencedResourceNotFound
	case !e.Warning:
		return schemaValidationError
	}
	return translationWarning
}

// patchedCondition summarizes an EnvoyFilter's patches; nil when it
// applies to no connected gateway.
func patchedCondition(patches []model.PatchState, generation int64) *metav1alpha1.IstioCondition {
	if len(patches) == 0 {
		return nil
	}
	c := &metav1alpha1.IstioCondition{Type: ConditionPatched, Status: "True", Reason: "Applied", ObservedGeneration: generation}
	var parts []string
	for _, p := range patches {
		s := fmt.Sprintf("spec.configPatches[%d] %s %s: ", p.Index, p.ApplyTo, p.Operation)
		switch {
		case p.Skipped != "" && p.Matched == 0:
			s += "not run: " + p.Skipped
			c.Status, c.Reason = "False", "NotApplied"
		case p.Matched == 0:
			s += "matched nothing"
			c.Status, c.Reason = "False", "NotApplied"
		default:
			s += fmt.Sprintf("changed %d of %d matched", p.Changed, p.Matched)
		}
		if p.Failed > 0 {
			s += fmt.Sprintf(", %d left unpatched (the result would not validate)", p.Failed)
			c.Status, c.Reason = "False", "NotApplied"
		}
		if p.Withheld > 0 {
			s += fmt.Sprintf(", %d withheld after a gateway rejected them", p.Withheld)
			c.Status, c.Reason = "False", "NotApplied"
		}
		unit := "configurations"
		if p.Configurations == 1 {
			unit = "configuration"
		}
		parts = append(parts, s+fmt.Sprintf(" (%d gateway %s)", p.Configurations, unit))
	}
	c.Message = strings.Join(parts, "; ")
	return c
}
