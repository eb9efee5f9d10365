package testenv

import (
	"context"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// FillServiceAccountTokens does for an apiserver what kube-controller-
// manager's token controller does in a real cluster, which envtest does not
// run: every interval until ctx ends, it fills each service-account-token
// Secret still empty with a token bound to that Secret (so deleting the
// Secret revokes it), the apiserver's CA and the namespace.
func FillServiceAccountTokens(ctx context.Context, cfg *rest.Config, interval time.Duration) {
	cs := kubernetes.NewForConfigOrDie(cfg)
	for ctx.Err() == nil {
		secrets, err := cs.CoreV1().Secrets("").List(ctx, metav1.ListOptions{FieldSelector: "type=" + string(corev1.SecretTypeServiceAccountToken)})
		if err == nil {
			for i := range secrets.Items {
				s := &secrets.Items[i]
				if len(s.Data[corev1.ServiceAccountTokenKey]) > 0 {
					continue
				}
				tr, err := cs.CoreV1().ServiceAccounts(s.Namespace).CreateToken(ctx, s.Annotations[corev1.ServiceAccountNameKey], &authenticationv1.TokenRequest{
					Spec: authenticationv1.TokenRequestSpec{
						ExpirationSeconds: ptr.To(int64(24 * 3600)),
						BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: s.Name, UID: s.UID},
					},
				}, metav1.CreateOptions{})
				if err != nil {
					continue
				}
				s.Data = map[string][]byte{corev1.ServiceAccountTokenKey: []byte(tr.Status.Token), corev1.ServiceAccountRootCAKey: cfg.CAData, "namespace": []byte(s.Namespace)}
				_, _ = cs.CoreV1().Secrets(s.Namespace).Update(ctx, s, metav1.UpdateOptions{})
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(interval):
		}
	}
}
