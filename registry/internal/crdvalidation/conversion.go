package crdvalidation

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// knownReviewVersions are the ConversionReview versions a webhook may
// speak, as kube-apiserver's list ("v1, v1beta1") names them.
var knownReviewVersions = []string{"v1", "v1beta1"}

// conversion checks spec.conversion: the strategy, and the webhook's
// client config and review versions, which only the Webhook strategy
// may set.
func (p policy) conversion(c *apiextensions.CustomResourceConversion, fld *field.Path) field.ErrorList {
	if c == nil {
		return nil
	}
	errs := oneOf(string(c.Strategy), fld.Child("strategy"), string(apiextensions.NoneConverter), string(apiextensions.WebhookConverter))
	if c.Strategy != apiextensions.WebhookConverter {
		if c.WebhookClientConfig != nil {
			errs = append(errs, field.Forbidden(fld.Child("webhookClientConfig"), "should not be set when strategy is not set to Webhook"))
		}
		if len(c.ConversionReviewVersions) > 0 {
			errs = append(errs, field.Forbidden(fld.Child("conversionReviewVersions"), "should not be set when strategy is not set to Webhook"))
		}
		return errs
	}
	configPath := fld.Child("webhookClientConfig")
	if cc := c.WebhookClientConfig; cc == nil {
		errs = append(errs, field.Required(configPath, "required when strategy is set to Webhook"))
	} else {
		switch {
		case (cc.URL == nil) == (cc.Service == nil):
			errs = append(errs, field.Required(configPath, "exactly one of url or service is required"))
		case cc.URL != nil:
			errs = append(errs, webhookURL(*cc.URL, configPath.Child("url"))...)
		default:
			errs = append(errs, webhookService(cc.Service, configPath.Child("service"))...)
		}
		if len(cc.CABundle) > 0 && p.checkCABundle {
			if err := caBundleError(cc.CABundle); err != nil {
				errs = append(errs, field.Invalid(configPath.Child("caBundle"), cc.CABundle, err.Error()))
			}
		}
	}
	return append(errs, p.reviewVersions(c.ConversionReviewVersions, fld.Child("conversionReviewVersions"))...)
}

// reviewVersions checks conversionReviewVersions: at least one, no
// repeats, each a DNS label, and (unless the stored CRD had none) one
// that kube-apiserver speaks.
func (p policy) reviewVersions(versions []string, fld *field.Path) field.ErrorList {
	if len(versions) == 0 {
		return field.ErrorList{field.Required(fld, "")}
	}
	var errs field.ErrorList
	seen := map[string]bool{}
	known := false
	for i, v := range versions {
		if seen[v] {
			errs = append(errs, field.Invalid(fld.Index(i), v, "duplicate version"))
			continue
		}
		seen[v] = true
		for _, msg := range utilvalidation.IsDNS1035Label(v) {
			errs = append(errs, field.Invalid(fld.Index(i), v, msg))
		}
		known = known || contains(knownReviewVersions, v)
	}
	if p.knownReviewVersion && !known {
		errs = append(errs, field.Invalid(fld, versions, "must include at least one of "+strings.Join(knownReviewVersions, ", ")))
	}
	return errs
}

// reviewVersionsKnownOrEmpty reports whether versions is empty or has a
// version kube-apiserver speaks.
func reviewVersionsKnownOrEmpty(versions []string) bool {
	if len(versions) == 0 {
		return true
	}
	for _, v := range versions {
		if contains(knownReviewVersions, v) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// urlForm ends the URL messages.
const urlForm = "; desired format: https://host[/path]"

// webhookURL checks a conversion webhook's url: https, with a host, and
// no user information, fragment or query.
func webhookURL(raw string, fld *field.Path) field.ErrorList {
	u, err := url.Parse(raw)
	if err != nil {
		return field.ErrorList{field.Required(fld, "url must be a valid URL: "+err.Error()+urlForm)}
	}
	var errs field.ErrorList
	if u.Scheme != "https" {
		errs = append(errs, field.Invalid(fld, u.Scheme, "'https' is the only allowed URL scheme"+urlForm))
	}
	if u.Host == "" {
		errs = append(errs, field.Invalid(fld, u.Host, "host must be specified"+urlForm))
	}
	if u.User != nil {
		errs = append(errs, field.Invalid(fld, u.User.String(), "user information is not permitted in the URL"))
	}
	if u.Fragment != "" {
		errs = append(errs, field.Invalid(fld, u.Fragment, "fragments are not permitted in the URL"))
	}
	if u.RawQuery != "" {
		errs = append(errs, field.Invalid(fld, u.RawQuery, "query parameters are not permitted in the URL"))
	}
	return errs
}

// webhookService checks a conversion webhook's in-cluster service: name,
// namespace, a valid port, and a path whose segments are DNS subdomains.
func webhookService(s *apiextensions.ServiceReference, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Name == "" {
		errs = append(errs, field.Required(fld.Child("name"), ""))
	}
	if s.Namespace == "" {
		errs = append(errs, field.Required(fld.Child("namespace"), ""))
	}
	if msgs := utilvalidation.IsValidPortNum(int(s.Port)); len(msgs) > 0 {
		errs = append(errs, field.Invalid(fld.Child("port"), s.Port, "port is not valid: "+strings.Join(msgs, ", ")))
	}
	if s.Path == nil {
		return errs
	}
	return append(errs, servicePath(*s.Path, fld.Child("path"))...)
}

// servicePath checks a webhook service path. Like kube-apiserver, it
// drops the first character whether or not it is the '/' it asks for.
func servicePath(p string, fld *field.Path) field.ErrorList {
	switch p {
	case "", "/":
		return nil
	case "//":
		return field.ErrorList{field.Invalid(fld, p, "segment[0] may not be empty")}
	}
	var errs field.ErrorList
	if p[0] != '/' {
		errs = append(errs, field.Invalid(fld, p, "must start with a '/'"))
	}
	rest := strings.TrimSuffix(p[1:], "/")
	for i, seg := range strings.Split(rest, "/") {
		if seg == "" {
			errs = append(errs, field.Invalid(fld, p, fmt.Sprintf("segment[%d] may not be empty", i)))
			continue
		}
		for _, msg := range utilvalidation.IsDNS1123Subdomain(seg) {
			errs = append(errs, field.Invalid(fld, p, fmt.Sprintf("segment[%d]: %v", i, msg)))
		}
	}
	return errs
}

// caBundleError says why caBundle holds no usable certificate, in the
// words of client-go's TLS configuration (which kube-apiserver asks), or
// returns nil.
func caBundleError(caBundle []byte) error {
	if x509.NewCertPool().AppendCertsFromPEM(caBundle) {
		return nil
	}
	return fmt.Errorf("unable to load root certificates: %w", pemError(caBundle))
}

// pemError says what is wrong with PEM data that yields no certificate.
func pemError(caBundle []byte) error {
	rest := caBundle
	for len(rest) > 0 {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return errors.New("unable to parse bytes as PEM block")
		}
		if block.Type != "CERTIFICATE" || len(block.Headers) > 0 {
			continue
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return fmt.Errorf("failed to parse certificate: %w", err)
		}
	}
	return errors.New("no valid certificate authority data seen")
}

// CABundleInvalid reports whether caBundle is set and holds no usable
// certificate, as kube-apiserver's webhook.ValidateCABundle finds it.
func CABundleInvalid(caBundle []byte) bool {
	return len(caBundle) > 0 && caBundleError(caBundle) != nil
}

// storedCABundleBroken reports whether the stored CRD's webhook caBundle
// is set and does not parse: an update may then keep a broken one.
func storedCABundleBroken(old *apiextensions.CustomResourceDefinition) bool {
	c := old.Spec.Conversion
	if c == nil || c.WebhookClientConfig == nil || len(c.WebhookClientConfig.CABundle) == 0 {
		return false
	}
	return caBundleError(c.WebhookClientConfig.CABundle) != nil
}
