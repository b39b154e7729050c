package status

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient/kclienttest"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/leaderelection"
)

// Bad timings stop a writer's Run with an error naming the status writer,
// before anything leads; the elector itself is tested in its package.
func TestCampaignRejectsBadTimings(t *testing.T) {
	err := campaign(context.Background(), leaderelection.Options{
		Client:        kclienttest.Kube(fake.NewClientset()),
		LeaseDuration: time.Second, RenewDeadline: time.Second, RetryPeriod: 10 * time.Millisecond,
	}, func(context.Context) { t.Error("led") })
	if err == nil || !strings.HasPrefix(err.Error(), "status: leader election: ") {
		t.Errorf("campaign = %v, want a status: leader election: error", err)
	}
	lease, renew, retry := leaseTimings(0, 0, 0)
	if lease != 15*time.Second || renew != 10*time.Second || retry != 2*time.Second {
		t.Errorf("leaseTimings(0, 0, 0) = %v, %v, %v, want 15s, 10s, 2s", lease, renew, retry)
	}
}
