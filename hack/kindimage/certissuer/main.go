// Command certissuer stands in for cert-manager on the registry-less kind
// management cluster of `make test-e2e-kind`: Cluster API's providers, CAPD
// and Flotilla ask for their webhook serving certificates with
// cert-manager.io/v1 Issuers and Certificates and have their caBundles filled
// by cert-manager's CA injector, and cert-manager's own images cannot be
// pulled there. It implements that subset for real:
//
//   - Issuers and ClusterIssuers of kind selfSigned and ca are marked Ready;
//   - each Certificate naming one gets a key and an X.509 certificate (common
//     name, DNS names, IP addresses, URIs, organizations, duration, isCA,
//     usages, private key algorithm and size), written to its spec.secretName
//     as a kubernetes.io/tls Secret with tls.crt, tls.key and ca.crt, and is
//     marked Ready; it is issued again when its spec changes or two thirds of
//     its lifetime are gone;
//   - webhook configurations and CustomResourceDefinitions annotated
//     cert-manager.io/inject-ca-from (or inject-ca-from-secret) get the ca.crt
//     of that Certificate's Secret as the caBundle of every webhook (of the
//     conversion webhook for a CRD).
//
// It reconciles everything every few seconds rather than watching: the
// clusters it serves hold a few dozen of these objects. ACME, Vault, venafi
// and CertificateRequests are not implemented. clusterctl init accepts it as
// an installed cert-manager: it only checks that an Issuer and a
// Certificate can be created.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
)

const (
	group            = "cert-manager.io"
	annInjectFrom    = "cert-manager.io/inject-ca-from"
	annInjectSecret  = "cert-manager.io/inject-ca-from-secret"
	annSpecHash      = "certissuer.flotilla.io/spec-hash"
	annCertName      = "cert-manager.io/certificate-name"
	annIssuerName    = "cert-manager.io/issuer-name"
	annIssuerKind    = "cert-manager.io/issuer-kind"
	annIssuerGroup   = "cert-manager.io/issuer-group"
	annCommonName    = "cert-manager.io/common-name"
	annAltNames      = "cert-manager.io/alt-names"
	defaultClusterNS = "cert-manager"
)

func gvk(kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: group, Version: "v1", Kind: kind}
}

type issuer struct {
	c         client.Client
	clusterNS string // where a ClusterIssuer's CA Secret lives
	log       func(format string, args ...any)
}

func main() {
	interval := flag.Duration("interval", 2*time.Second, "time between two reconciliations of everything")
	clusterNS := flag.String("cluster-resource-namespace", defaultClusterNS, "namespace of the CA Secrets of ClusterIssuers")
	flag.Parse()
	cfg, err := config.GetConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, "certissuer:", err)
		os.Exit(1)
	}
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, "certissuer:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	is := &issuer{c: c, clusterNS: *clusterNS, log: func(f string, a ...any) {
		fmt.Fprintf(os.Stderr, time.Now().UTC().Format(time.RFC3339)+" "+f+"\n", a...)
	}}
	is.log("certissuer: reconciling every %s", *interval)
	for ctx.Err() == nil {
		is.reconcileAll(ctx)
		select {
		case <-ctx.Done():
		case <-time.After(*interval):
		}
	}
}

func (is *issuer) reconcileAll(ctx context.Context) {
	for _, kind := range []string{"Issuer", "ClusterIssuer"} {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk(kind + "List"))
		if err := is.c.List(ctx, l); err != nil {
			is.log("list %s: %v", kind, err)
			continue
		}
		for i := range l.Items {
			is.markIssuer(ctx, &l.Items[i])
		}
	}
	certs := &unstructured.UnstructuredList{}
	certs.SetGroupVersionKind(gvk("CertificateList"))
	if err := is.c.List(ctx, certs); err != nil {
		is.log("list Certificates: %v", err)
	} else {
		for i := range certs.Items {
			if err := is.reconcileCertificate(ctx, &certs.Items[i]); err != nil {
				is.log("Certificate %s/%s: %v", certs.Items[i].GetNamespace(), certs.Items[i].GetName(), err)
			}
		}
	}
	for _, k := range []schema.GroupVersionKind{
		{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfiguration"},
		{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "MutatingWebhookConfiguration"},
		{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"},
	} {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(k.GroupVersion().WithKind(k.Kind + "List"))
		if err := is.c.List(ctx, l); err != nil {
			is.log("list %s: %v", k.Kind, err)
			continue
		}
		for i := range l.Items {
			if err := is.inject(ctx, &l.Items[i]); err != nil {
				is.log("inject CA into %s %s: %v", k.Kind, l.Items[i].GetName(), err)
			}
		}
	}
}

// issuerKind is what an Issuer or ClusterIssuer is: "selfSigned", "ca" or "".
func issuerKind(obj *unstructured.Unstructured) (string, string) {
	if _, ok, _ := unstructured.NestedMap(obj.Object, "spec", "selfSigned"); ok {
		return "selfSigned", ""
	}
	if s, ok, _ := unstructured.NestedString(obj.Object, "spec", "ca", "secretName"); ok {
		return "ca", s
	}
	return "", ""
}

func (is *issuer) markIssuer(ctx context.Context, obj *unstructured.Unstructured) {
	kind, _ := issuerKind(obj)
	status, reason, msg := "True", "IsReady", "Signing CA verified"
	if kind == "" {
		status, reason, msg = "False", "Unsupported", "certissuer implements the selfSigned and ca issuers only"
	}
	if err := is.setReady(ctx, obj, status, reason, msg, nil); err != nil {
		is.log("%s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
}

// setReady sets the Ready condition (and extra status fields) if it changed.
func (is *issuer) setReady(ctx context.Context, obj *unstructured.Unstructured, status, reason, msg string, extra map[string]any) error {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" && m["status"] == status && m["reason"] == reason && m["observedGeneration"] == obj.GetGeneration() && extra == nil {
			return nil
		}
	}
	st, _, _ := unstructured.NestedMap(obj.Object, "status")
	if st == nil {
		st = map[string]any{}
	}
	st["conditions"] = []any{map[string]any{
		"type": "Ready", "status": status, "reason": reason, "message": msg,
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339), "observedGeneration": obj.GetGeneration(),
	}}
	for k, v := range extra {
		st[k] = v
	}
	obj.Object["status"] = st
	return is.c.Status().Update(ctx, obj)
}

func stringSlice(obj *unstructured.Unstructured, path ...string) []string {
	s, _, _ := unstructured.NestedStringSlice(obj.Object, path...)
	return s
}

// certSpec reads the fields Issue honours.
func certSpec(obj *unstructured.Unstructured) (CertSpec, error) {
	s := CertSpec{
		DNSNames: stringSlice(obj, "spec", "dnsNames"), IPAddresses: stringSlice(obj, "spec", "ipAddresses"),
		URIs: stringSlice(obj, "spec", "uris"), Organizations: stringSlice(obj, "spec", "subject", "organizations"),
		Usages: stringSlice(obj, "spec", "usages"),
	}
	s.CommonName, _, _ = unstructured.NestedString(obj.Object, "spec", "commonName")
	s.IsCA, _, _ = unstructured.NestedBool(obj.Object, "spec", "isCA")
	s.KeyAlgorithm, _, _ = unstructured.NestedString(obj.Object, "spec", "privateKey", "algorithm")
	if size, ok, _ := unstructured.NestedInt64(obj.Object, "spec", "privateKey", "size"); ok {
		s.KeySize = int(size)
	}
	if d, ok, _ := unstructured.NestedString(obj.Object, "spec", "duration"); ok && d != "" {
		dur, err := time.ParseDuration(d)
		if err != nil {
			return s, fmt.Errorf("spec.duration: %w", err)
		}
		s.Duration = dur
	}
	return s, nil
}

func specHash(obj *unstructured.Unstructured) string {
	spec, _, _ := unstructured.NestedMap(obj.Object, "spec")
	b, _ := json.Marshal(spec)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

func (is *issuer) reconcileCertificate(ctx context.Context, cert *unstructured.Unstructured) error {
	ns := cert.GetNamespace()
	secretName, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
	ref, _, _ := unstructured.NestedStringMap(cert.Object, "spec", "issuerRef")
	if secretName == "" || ref["name"] == "" {
		return is.setReady(ctx, cert, "False", "Invalid", "spec.secretName and spec.issuerRef.name are required", nil)
	}
	kind := ref["kind"]
	if kind == "" {
		kind = "Issuer"
	}
	if g := ref["group"]; g != "" && g != group {
		return is.setReady(ctx, cert, "False", "Unsupported", "issuers of group "+g+" are not implemented", nil)
	}
	iss := &unstructured.Unstructured{}
	iss.SetGroupVersionKind(gvk(kind))
	key := client.ObjectKey{Name: ref["name"]}
	caNS := is.clusterNS
	if kind == "Issuer" {
		key.Namespace, caNS = ns, ns
	}
	if err := is.c.Get(ctx, key, iss); err != nil {
		if apierrors.IsNotFound(err) {
			return is.setReady(ctx, cert, "False", "Pending", fmt.Sprintf("%s %q not found", kind, ref["name"]), nil)
		}
		return err
	}
	ikind, caSecret := issuerKind(iss)
	if ikind == "" {
		return is.setReady(ctx, cert, "False", "Unsupported", "certissuer implements the selfSigned and ca issuers only", nil)
	}
	hash := specHash(cert) + "/" + kind + "/" + ref["name"]
	secret := &corev1.Secret{}
	err := is.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: secretName}, secret)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	exists := err == nil
	if exists && secret.Annotations[annSpecHash] == hash && !NeedsRenewal(secret.Data[corev1.TLSCertKey], time.Now()) {
		return is.setReady(ctx, cert, "True", "Ready", "Certificate is up to date and has not expired", nil)
	}
	var signer *Signer
	if ikind == "ca" {
		caSec := &corev1.Secret{}
		if err := is.c.Get(ctx, client.ObjectKey{Namespace: caNS, Name: caSecret}, caSec); err != nil {
			return is.setReady(ctx, cert, "False", "Pending", fmt.Sprintf("CA Secret %s/%s: %v", caNS, caSecret, err), nil)
		}
		if signer, err = ParseSigner(caSec.Data[corev1.TLSCertKey], caSec.Data[corev1.TLSPrivateKeyKey]); err != nil {
			return is.setReady(ctx, cert, "False", "Pending", fmt.Sprintf("CA Secret %s/%s: %v", caNS, caSecret, err), nil)
		}
	}
	spec, err := certSpec(cert)
	if err != nil {
		return is.setReady(ctx, cert, "False", "Invalid", err.Error(), nil)
	}
	issued, err := Issue(spec, signer, time.Now())
	if err != nil {
		return is.setReady(ctx, cert, "False", "Failed", err.Error(), nil)
	}
	if !exists {
		secret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: secretName}}
	}
	secret.Type = corev1.SecretTypeTLS
	if secret.Annotations == nil {
		secret.Annotations = map[string]string{}
	}
	if secret.Labels == nil {
		secret.Labels = map[string]string{}
	}
	tmplLabels, _, _ := unstructured.NestedStringMap(cert.Object, "spec", "secretTemplate", "labels")
	for k, v := range tmplLabels {
		secret.Labels[k] = v
	}
	tmplAnns, _, _ := unstructured.NestedStringMap(cert.Object, "spec", "secretTemplate", "annotations")
	for k, v := range tmplAnns {
		secret.Annotations[k] = v
	}
	secret.Labels["controller.cert-manager.io/fao"] = "true"
	secret.Annotations[annSpecHash] = hash
	secret.Annotations[annCertName] = cert.GetName()
	secret.Annotations[annIssuerName] = ref["name"]
	secret.Annotations[annIssuerKind] = kind
	secret.Annotations[annIssuerGroup] = group
	secret.Annotations[annCommonName] = spec.CommonName
	secret.Annotations[annAltNames] = strings.Join(spec.DNSNames, ",")
	secret.Data = map[string][]byte{corev1.TLSCertKey: issued.Cert, corev1.TLSPrivateKeyKey: issued.Key, "ca.crt": issued.CA}
	if exists {
		err = is.c.Update(ctx, secret)
	} else {
		err = is.c.Create(ctx, secret)
	}
	if err != nil {
		return fmt.Errorf("write Secret %s: %w", secretName, err)
	}
	is.log("issued Certificate %s/%s into Secret %s (%s issuer %s, until %s)", ns, cert.GetName(), secretName, ikind, ref["name"], issued.NotAfter.Format(time.RFC3339))
	rev, _, _ := unstructured.NestedInt64(cert.Object, "status", "revision")
	life := issued.NotAfter.Sub(issued.NotBefore)
	return is.setReady(ctx, cert, "True", "Ready", "Certificate is up to date and has not expired", map[string]any{
		"notBefore": issued.NotBefore.Format(time.RFC3339), "notAfter": issued.NotAfter.Format(time.RFC3339),
		"renewalTime": issued.NotAfter.Add(-life / 3).Format(time.RFC3339), "revision": rev + 1,
	})
}

// caFrom reads the ca.crt the annotations of obj point at; nil without them.
func (is *issuer) caFrom(ctx context.Context, obj *unstructured.Unstructured) ([]byte, error) {
	a := obj.GetAnnotations()
	var secretKey client.ObjectKey
	switch {
	case a[annInjectFrom] != "":
		ns, name, ok := strings.Cut(a[annInjectFrom], "/")
		if !ok {
			return nil, fmt.Errorf("%s: want namespace/name, have %q", annInjectFrom, a[annInjectFrom])
		}
		cert := &unstructured.Unstructured{}
		cert.SetGroupVersionKind(gvk("Certificate"))
		if err := is.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cert); err != nil {
			return nil, client.IgnoreNotFound(err)
		}
		s, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
		secretKey = client.ObjectKey{Namespace: ns, Name: s}
	case a[annInjectSecret] != "":
		ns, name, ok := strings.Cut(a[annInjectSecret], "/")
		if !ok {
			return nil, fmt.Errorf("%s: want namespace/name, have %q", annInjectSecret, a[annInjectSecret])
		}
		secretKey = client.ObjectKey{Namespace: ns, Name: name}
	default:
		return nil, nil
	}
	secret := &corev1.Secret{}
	if err := is.c.Get(ctx, secretKey, secret); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return secret.Data["ca.crt"], nil
}

// inject writes the CA into every caBundle of a webhook configuration or into
// a CRD's conversion webhook.
func (is *issuer) inject(ctx context.Context, obj *unstructured.Unstructured) error {
	ca, err := is.caFrom(ctx, obj)
	if err != nil || len(ca) == 0 {
		return err
	}
	bundle := b64(ca)
	changed := false
	if obj.GetKind() == "CustomResourceDefinition" {
		if s, _, _ := unstructured.NestedString(obj.Object, "spec", "conversion", "strategy"); s != "Webhook" {
			return nil
		}
		if cur, _, _ := unstructured.NestedString(obj.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle"); cur != bundle {
			if err := unstructured.SetNestedField(obj.Object, bundle, "spec", "conversion", "webhook", "clientConfig", "caBundle"); err != nil {
				return err
			}
			changed = true
		}
	} else {
		hooks, _, _ := unstructured.NestedSlice(obj.Object, "webhooks")
		for i, h := range hooks {
			m, _ := h.(map[string]any)
			cc, _ := m["clientConfig"].(map[string]any)
			if cc == nil {
				cc = map[string]any{}
				m["clientConfig"] = cc
			}
			if cc["caBundle"] != bundle {
				cc["caBundle"] = bundle
				hooks[i], changed = m, true
			}
		}
		if changed {
			if err := unstructured.SetNestedSlice(obj.Object, hooks, "webhooks"); err != nil {
				return err
			}
		}
	}
	if !changed {
		return nil
	}
	if err := is.c.Update(ctx, obj); err != nil {
		return err
	}
	is.log("injected the CA into %s %s", obj.GetKind(), obj.GetName())
	return nil
}
