//! Stripe's own description of its API (`tests/stripe/`, MIT, Stripe): an
//! OpenAPI 3.0 validator for what is sent to and received from Stripe's
//! paths, checked on the spec's own examples and on 2026's example objects.
//! Where the 2026 objects differ from the 2023-08-16 schemas (fields added or
//! retyped since), each difference is named here.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use serde_json::{json, Map, Value};

/// The vendored specification subset (API version 2023-08-16).
pub struct Spec {
    document: Value,
}

pub fn spec() -> &'static Spec {
    static SPEC: OnceLock<Spec> = OnceLock::new();
    SPEC.get_or_init(|| {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/stripe/openapi-subset.json"
        ))
        .expect("tests/stripe/openapi-subset.json is vendored");
        Spec {
            document: serde_json::from_str(&text).expect("the specification is JSON"),
        }
    })
}

/// Stripe's current example objects, by object name.
pub fn fixtures() -> &'static Map<String, Value> {
    static FIXTURES: OnceLock<Map<String, Value>> = OnceLock::new();
    FIXTURES.get_or_init(|| {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/stripe/fixtures-2026.json"
        ))
        .expect("tests/stripe/fixtures-2026.json is vendored");
        let mut all: Value = serde_json::from_str(&text).expect("the fixtures are JSON");
        match all["resources"].take() {
            Value::Object(resources) => resources,
            other => panic!("no resources in the fixtures: {other}"),
        }
    })
}

impl Spec {
    /// The API version the specification describes.
    pub fn version(&self) -> &str {
        self.document["info"]["version"]
            .as_str()
            .unwrap_or_default()
    }

    fn resolve<'a>(&'a self, schema: &'a Value) -> &'a Value {
        match schema.get("$ref").and_then(Value::as_str) {
            Some(reference) => {
                let name = reference
                    .strip_prefix("#/components/schemas/")
                    .unwrap_or_else(|| panic!("an unexpected $ref {reference}"));
                &self.document["components"]["schemas"][name]
            }
            None => schema,
        }
    }

    /// What is wrong with `value` as the component schema `name` (an object
    /// such as `payment_intent`), one line per violation, each with its path.
    pub fn check_object(&self, name: &str, value: &Value) -> Vec<String> {
        let schema = &self.document["components"]["schemas"][name];
        assert!(schema.is_object(), "no schema {name} in the specification");
        let mut errors = Vec::new();
        self.validate(schema, value, name, &mut errors);
        errors
    }

    /// The operation at `method` and `path` (a path template of the spec,
    /// such as `/v1/payment_intents/{intent}/capture`).
    fn operation(&self, method: &str, path: &str) -> &Value {
        let operation = &self.document["paths"][path][method.to_ascii_lowercase()];
        assert!(
            operation.is_object(),
            "the specification has no {method} {path}"
        );
        operation
    }

    /// What is wrong with a response body of the operation.
    pub fn check_response(
        &self,
        method: &str,
        path: &str,
        status: u16,
        body: &Value,
    ) -> Vec<String> {
        let responses = &self.operation(method, path)["responses"];
        let response = responses
            .get(status.to_string())
            .unwrap_or(&responses["default"]);
        let schema = &response["content"]["application/json"]["schema"];
        assert!(
            schema.is_object(),
            "{method} {path} describes no {status} body"
        );
        let mut errors = Vec::new();
        self.validate(schema, body, "body", &mut errors);
        errors
    }

    /// What is wrong with the form a client sends to the operation: each
    /// key (`metadata[ride_id]`, `expand[]`) must be a parameter the
    /// specification lists, with a value of its type. `exceptions` names
    /// parameters newer than the specification.
    pub fn check_form(
        &self,
        method: &str,
        path: &str,
        form: &[(String, String)],
        exceptions: &[&str],
    ) -> Vec<String> {
        let operation = self.operation(method, path);
        let schema =
            &operation["requestBody"]["content"]["application/x-www-form-urlencoded"]["schema"];
        let kept: Vec<(String, String)> = form
            .iter()
            .filter(|(key, _)| !exceptions.contains(&key.as_str()))
            .cloned()
            .collect();
        let mut errors = Vec::new();
        self.validate_form(schema, &nest(&kept), "form", &mut errors);
        errors
    }

    /// What is wrong with the query a client sends to the operation.
    pub fn check_query(&self, method: &str, path: &str, query: &[(String, String)]) -> Vec<String> {
        let parameters = self.operation(method, path)["parameters"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let mut errors = Vec::new();
        let nested = nest(query);
        for (name, value) in nested.as_object().into_iter().flatten() {
            match parameters
                .iter()
                .find(|p| p["in"] == "query" && p["name"] == name.as_str())
            {
                Some(parameter) => {
                    self.validate_form(&parameter["schema"], value, name, &mut errors)
                }
                None => errors.push(format!("{name}: not a query parameter of {method} {path}")),
            }
        }
        errors
    }

    /// Form values arrive as text: a number or a boolean is its text.
    fn validate_form(&self, schema: &Value, value: &Value, at: &str, errors: &mut Vec<String>) {
        self.check(schema, value, at, errors, true);
    }

    fn validate(&self, schema: &Value, value: &Value, at: &str, errors: &mut Vec<String>) {
        self.check(schema, value, at, errors, false);
    }

    fn check(&self, schema: &Value, value: &Value, at: &str, errors: &mut Vec<String>, text: bool) {
        let schema = self.resolve(schema);
        if value.is_null() {
            if schema["nullable"] != true {
                errors.push(format!("{at}: null, but not nullable"));
            }
            return;
        }
        if let Some(branches) = schema["anyOf"].as_array().or(schema["oneOf"].as_array()) {
            // Fitting one branch is enough; fitting none, what is wrong is
            // told as the branch that came nearest (an expandable field's
            // object rather than its id) sees it.
            let nearest = branches
                .iter()
                .map(|branch| {
                    let mut inner = Vec::new();
                    self.check(branch, value, at, &mut inner, text);
                    inner
                })
                .min_by_key(Vec::len)
                .unwrap_or_default();
            errors.extend(nearest);
            return;
        }
        if let Some(allowed) = schema["enum"].as_array() {
            if !allowed.contains(value) {
                errors.push(format!(
                    "{at}: {value} is not one of {}",
                    Value::from(allowed.clone())
                ));
            }
            return;
        }
        let kind = schema["type"].as_str().unwrap_or("");
        let fits = match (kind, value) {
            ("object", Value::Object(_)) | ("array", Value::Array(_)) => true,
            ("string", Value::String(_)) => true,
            ("integer", Value::Number(n)) => n.is_i64() || n.is_u64(),
            ("number", Value::Number(_)) => true,
            ("boolean", Value::Bool(_)) => true,
            ("integer", Value::String(s)) if text => s.parse::<i64>().is_ok(),
            ("number", Value::String(s)) if text => s.parse::<f64>().is_ok(),
            ("boolean", Value::String(s)) if text => s == "true" || s == "false",
            // A form sends an empty string to unset an optional object.
            ("object", Value::String(s)) if text => s.is_empty(),
            ("", _) => true,
            _ => false,
        };
        if !fits {
            errors.push(format!("{at}: {value} is not of type {kind}"));
            return;
        }
        if let (Some(max), Value::String(s)) = (schema["maxLength"].as_u64(), value) {
            if s.chars().count() as u64 > max {
                errors.push(format!("{at}: longer than {max} characters"));
            }
        }
        match value {
            Value::Object(fields) => {
                let properties = schema["properties"].as_object();
                for (name, field) in fields {
                    let at = format!("{at}.{name}");
                    match (
                        properties.and_then(|p| p.get(name)),
                        &schema["additionalProperties"],
                    ) {
                        (Some(property), _) => self.check(property, field, &at, errors, text),
                        (None, Value::Object(_)) => {
                            self.check(&schema["additionalProperties"], field, &at, errors, text)
                        }
                        (None, Value::Bool(true)) => {}
                        (None, _) if properties.is_none() => {}
                        (None, _) => errors.push(format!("{at}: not in the schema")),
                    }
                }
                for required in schema["required"].as_array().into_iter().flatten() {
                    let name = required.as_str().unwrap_or_default();
                    if !fields.contains_key(name) {
                        errors.push(format!("{at}.{name}: required, and missing"));
                    }
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    self.check(&schema["items"], item, &format!("{at}[{i}]"), errors, text);
                }
            }
            _ => {}
        }
    }
}

/// A form's `a[b][c]=v` and `a[]=v` keys as nested JSON, every leaf a string.
fn nest(form: &[(String, String)]) -> Value {
    let mut root = Value::Object(Map::new());
    for (key, value) in form {
        let (head, rest) = key.split_once('[').unwrap_or((key, ""));
        let mut segments = vec![head.to_owned()];
        if !rest.is_empty() {
            segments.extend(rest.trim_end_matches(']').split("][").map(str::to_owned));
        }
        insert(&mut root, &segments, value);
    }
    root
}

fn insert(node: &mut Value, segments: &[String], value: &str) {
    match segments.split_first() {
        None => *node = Value::String(value.to_owned()),
        // `a[]`: one more item of an array.
        Some((head, _)) if head.is_empty() => {
            if !node.is_array() {
                *node = Value::Array(Vec::new());
            }
            if let Value::Array(items) = node {
                items.push(Value::String(value.to_owned()));
            }
        }
        Some((head, rest)) => {
            if !node.is_object() {
                *node = Value::Object(Map::new());
            }
            if let Value::Object(fields) = node {
                insert(
                    fields.entry(head.clone()).or_insert(Value::Null),
                    rest,
                    value,
                );
            }
        }
    }
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn the_validator_accepts_a_well_formed_payment_intent_and_names_each_thing_wrong() {
    let spec = spec();
    let good = json!({
        "id": "pi_1", "object": "payment_intent", "amount": 2000, "currency": "eur",
        "capture_method": "manual", "confirmation_method": "automatic", "created": 1_700_000_000,
        "livemode": false, "payment_method_types": ["card"], "status": "requires_capture",
        "latest_charge": "ch_1", "metadata": {"ride_id": "7"}, "next_action": null,
    });
    assert_eq!(
        spec.check_object("payment_intent", &good),
        Vec::<String>::new()
    );

    let mut bad = good.clone();
    bad["amount"] = json!("2000");
    bad["status"] = json!("authorized");
    bad["made_up"] = json!(1);
    bad["metadata"]["ride_id"] = json!(7);
    bad.as_object_mut().unwrap().remove("currency");
    bad["livemode"] = Value::Null;
    let errors: BTreeSet<String> = spec
        .check_object("payment_intent", &bad)
        .into_iter()
        .collect();
    for expected in [
        "payment_intent.amount: \"2000\" is not of type integer",
        "payment_intent.made_up: not in the schema",
        "payment_intent.metadata.ride_id: 7 is not of type string",
        "payment_intent.currency: required, and missing",
        "payment_intent.livemode: null, but not nullable",
    ] {
        assert!(errors.contains(expected), "{expected} not in {errors:#?}");
    }
    assert!(errors
        .iter()
        .any(|e| e.starts_with("payment_intent.status: \"authorized\" is not one of")));
}

#[test]
fn the_validator_reads_forms_as_stripe_nests_them() {
    let spec = spec();
    let form = pairs(&[
        ("amount", "2000"),
        ("currency", "eur"),
        ("confirm", "true"),
        ("capture_method", "manual"),
        ("payment_method", "pm_card_visa"),
        ("metadata[ride_id]", "7"),
        ("expand[]", "latest_charge"),
    ]);
    assert_eq!(
        spec.check_form("POST", "/v1/payment_intents", &form, &[]),
        Vec::<String>::new()
    );
    let wrong = pairs(&[
        ("amount", "twenty"),
        ("currency", "eur"),
        ("capture_method", "later"),
        ("payment_source", "tok_visa"),
    ]);
    let errors = spec.check_form("POST", "/v1/payment_intents", &wrong, &[]);
    assert_eq!(errors.len(), 3, "{errors:#?}");
    let newer = pairs(&[
        ("amount", "2000"),
        ("currency", "eur"),
        (
            "payment_method_options[card][request_incremental_authorization]",
            "if_available",
        ),
    ]);
    assert!(!spec
        .check_form("POST", "/v1/payment_intents", &newer, &[])
        .is_empty());
    assert_eq!(
        spec.check_form(
            "POST",
            "/v1/payment_intents",
            &newer,
            &["payment_method_options[card][request_incremental_authorization]"]
        ),
        Vec::<String>::new()
    );
    assert_eq!(
        spec.check_query(
            "GET",
            "/v1/payment_intents/{intent}",
            &pairs(&[("expand[]", "latest_charge")])
        ),
        Vec::<String>::new()
    );
}

/// How Stripe's 2026 example objects differ from the 2023-08-16 schemas:
/// fields added since (`not in the schema`), and one retyped (a customer's
/// discount now names its `source` where it named a `coupon`). Nothing
/// ridepay reads is among them; the client reads every example object
/// whole all the same.
const NEWER_THAN_THE_SPECIFICATION: &[&str] = &[
    "account.business_profile.annual_revenue: not in the schema",
    "account.business_profile.estimated_worker_count: not in the schema",
    "account.business_profile.minority_owned_business_designation: not in the schema",
    "account.settings.bacs_debit_payments.display_name: null, but not nullable",
    "account.settings.bacs_debit_payments.service_user_number: not in the schema",
    "account.settings.invoices: not in the schema",
    "balance_transaction.balance_type: not in the schema",
    "charge.billing_details.tax_id: not in the schema",
    "charge.outcome.advice_code: not in the schema",
    "charge.outcome.network_advice_code: not in the schema",
    "charge.outcome.network_decline_code: not in the schema",
    "charge.payment_method_details.card.amount_authorized: not in the schema",
    "charge.payment_method_details.card.authorization_code: not in the schema",
    "charge.payment_method_details.card.extended_authorization: not in the schema",
    "charge.payment_method_details.card.incremental_authorization: not in the schema",
    "charge.payment_method_details.card.multicapture: not in the schema",
    "charge.payment_method_details.card.network_transaction_id: not in the schema",
    "charge.payment_method_details.card.overcapture: not in the schema",
    "charge.payment_method_details.card.regulated_status: not in the schema",
    "charge.payment_method_details.card.three_d_secure.electronic_commerce_indicator: not in the schema",
    "charge.payment_method_details.card.three_d_secure.exemption_indicator: not in the schema",
    "charge.payment_method_details.card.three_d_secure.transaction_id: not in the schema",
    "charge.payment_method_details.card.transaction_link_id: not in the schema",
    "charge.source: not in the schema",
    "customer.discount.coupon: required, and missing",
    "customer.discount.customer_account: not in the schema",
    "customer.discount.source: not in the schema",
    "customer.discount.subscription_item: not in the schema",
    "customer.invoice_settings.rendering_options.template: not in the schema",
    "dispute.enhanced_eligibility_types: not in the schema",
    "dispute.evidence.enhanced_evidence: not in the schema",
    "dispute.evidence_details.enhanced_eligibility: not in the schema",
    "dispute.payment_method_details.card.case_type: not in the schema",
    "dispute.payment_method_details.card.network: not in the schema",
    "payment_intent.customer_account: not in the schema",
    "payment_intent.excluded_payment_method_types: not in the schema",
    "payment_intent.managed_payments: not in the schema",
    "payment_intent.payment_method_configuration_details: not in the schema",
    "payment_intent.source: not in the schema",
    "payment_method.allow_redisplay: not in the schema",
    "payment_method.billing_details.tax_id: not in the schema",
    "payment_method.card.display_brand: not in the schema",
    "payment_method.card.regulated_status: not in the schema",
    "payment_method.customer_account: not in the schema",
    "payout.application_fee: not in the schema",
    "payout.application_fee_amount: not in the schema",
    "payout.payout_method: not in the schema",
    "payout.trace_id: not in the schema",
    "refund.customer: not in the schema",
    "refund.customer_account: not in the schema",
    "refund.destination_details: not in the schema",
    "refund.payment_method: not in the schema",
    "setup_intent.excluded_payment_method_types: not in the schema",
    "setup_intent.payment_method_configuration_details: not in the schema",
];

#[test]
fn the_2026_example_objects_differ_from_the_2023_schemas_only_as_named() {
    let spec = spec();
    let mut found = BTreeSet::new();
    for (name, object) in fixtures() {
        for error in spec.check_object(name, object) {
            found.insert(error);
        }
    }
    let named: BTreeSet<String> = NEWER_THAN_THE_SPECIFICATION
        .iter()
        .map(|e| e.to_string())
        .collect();
    assert_eq!(
        found, named,
        "name each difference in NEWER_THAN_THE_SPECIFICATION"
    );
}

#[test]
fn a_response_is_checked_against_its_operations_schema_and_an_error_against_the_default() {
    let spec = spec();
    let mut intent = fixtures()["payment_intent"].clone();
    for added in NEWER_THAN_THE_SPECIFICATION {
        if let Some(field) = added
            .strip_prefix("payment_intent.")
            .and_then(|rest| rest.strip_suffix(": not in the schema"))
        {
            intent.as_object_mut().unwrap().remove(field);
        }
    }
    assert_eq!(
        spec.check_response("GET", "/v1/payment_intents/{intent}", 200, &intent),
        Vec::<String>::new()
    );
    let declined = json!({"error": {
        "type": "card_error", "code": "card_declined", "decline_code": "generic_decline",
        "message": "Your card was declined.",
    }});
    assert_eq!(
        spec.check_response("POST", "/v1/payment_intents", 402, &declined),
        Vec::<String>::new()
    );
    let not_an_error = json!({"error": {"kind": "card_error"}});
    assert!(!spec
        .check_response("POST", "/v1/payment_intents", 402, &not_an_error)
        .is_empty());
}

#[test]
fn every_form_the_client_sends_is_one_the_specification_takes_but_the_named_newer_parameter() {
    use ridepay::payments::stripe::intents::{
        cancel_form, capture_form, create_form, increment_form, NEWER_PARAMETERS,
    };
    use ridepay::payments::{
        CancelIntent, CaptureIntent, CaptureMethod, CreateIntent, HoldRequest, IncrementIntent,
    };
    let spec = spec();
    let create = |capture_method| CreateIntent {
        idempotency_key: "k".to_owned(),
        amount_cents: 2000,
        currency: "eur".to_owned(),
        customer: Some("cus_1".to_owned()),
        payment_method: "pm_card_visa".to_owned(),
        capture_method,
        return_url: "https://ridepay.example/payments/return".to_owned(),
        metadata: vec![
            ("ride_id".to_owned(), "7".to_owned()),
            ("idempotency_key_id".to_owned(), "9".to_owned()),
        ],
        hold: HoldRequest::RIDE_HAILING,
        off_session: false,
        transfer_group: None,
        expand_balance_transaction: false,
    };
    // Call version 4's: the PaymentIntent in a transfer group, its
    // charge's balance transaction asked for.
    let with_fee = |capture_method| CreateIntent {
        transfer_group: Some("ridepay-ab12".to_owned()),
        expand_balance_transaction: true,
        ..create(capture_method)
    };
    let capture = |expand_balance_transaction| CaptureIntent {
        idempotency_key: "k".to_owned(),
        intent_id: "pi_1".to_owned(),
        amount_to_capture_cents: 1500,
        expand_balance_transaction,
    };
    let intent = "/v1/payment_intents/{intent}";
    let forms = [
        (
            "/v1/payment_intents".to_owned(),
            create_form(&create(CaptureMethod::Manual)),
        ),
        (
            "/v1/payment_intents".to_owned(),
            create_form(&create(CaptureMethod::Automatic)),
        ),
        // A tip after the ride: off session, on the saved card.
        (
            "/v1/payment_intents".to_owned(),
            create_form(&CreateIntent {
                off_session: true,
                ..create(CaptureMethod::Automatic)
            }),
        ),
        (
            "/v1/payment_intents".to_owned(),
            create_form(&with_fee(CaptureMethod::Manual)),
        ),
        (
            "/v1/payment_intents".to_owned(),
            create_form(&CreateIntent {
                off_session: true,
                ..with_fee(CaptureMethod::Automatic)
            }),
        ),
        (format!("{intent}/capture"), capture_form(&capture(false))),
        (format!("{intent}/capture"), capture_form(&capture(true))),
        (
            format!("{intent}/increment_authorization"),
            increment_form(&IncrementIntent {
                idempotency_key: "k".to_owned(),
                intent_id: "pi_1".to_owned(),
                amount_cents: 2500,
            }),
        ),
        (
            format!("{intent}/cancel"),
            cancel_form(&CancelIntent {
                idempotency_key: "k".to_owned(),
                intent_id: "pi_1".to_owned(),
                cancellation_reason: "requested_by_customer".to_owned(),
            }),
        ),
        (
            format!("{intent}/cancel"),
            cancel_form(&CancelIntent {
                idempotency_key: "k".to_owned(),
                intent_id: "pi_1".to_owned(),
                cancellation_reason: "abandoned".to_owned(),
            }),
        ),
    ];
    for (path, form) in &forms {
        assert_eq!(
            spec.check_form("POST", path, form, NEWER_PARAMETERS),
            Vec::<String>::new(),
            "{path}: {form:?}"
        );
    }
    // Refunds, of a PaymentIntent and of a charge made before them.
    use ridepay::payments::stripe::refunds::{list_query, refund_form};
    use ridepay::payments::{Payment, RefundRequest};
    for payment in [
        Payment::Intent("pi_1".to_owned()),
        Payment::Charge("ch_1".to_owned()),
    ] {
        let form = refund_form(&RefundRequest {
            idempotency_key: "k".to_owned(),
            payment: payment.clone(),
            amount_cents: 500,
            reason: Some("requested_by_customer".to_owned()),
            metadata: vec![("refund_id".to_owned(), "3".to_owned())],
        });
        assert_eq!(
            spec.check_form("POST", "/v1/refunds", &form, &[]),
            Vec::<String>::new(),
            "{form:?}"
        );
        let query: Vec<(String, String)> = list_query(&payment)
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect();
        assert_eq!(
            spec.check_query("GET", "/v1/refunds", &query),
            Vec::<String>::new()
        );
    }
    // Reconciliation's lookups: a list by `created` and customer, from a
    // starting point, and a search by metadata.
    use ridepay::payments::stripe::intents::{list_query as intents_query, search_query};
    let owned = |query: Vec<(&str, String)>| -> Vec<(String, String)> {
        query
            .into_iter()
            .map(|(name, value)| (name.to_owned(), value))
            .collect()
    };
    let list = ridepay::payments::ListIntents {
        starting_after: Some("pi_1".to_owned()),
        ..ridepay::payments::ListIntents::since(chrono::Utc::now(), Some("cus_1".to_owned()))
    };
    assert_eq!(
        spec.check_query("GET", "/v1/payment_intents", &owned(intents_query(&list))),
        Vec::<String>::new()
    );
    let search = owned(search_query(&[("ridepay_key", "ab12")]));
    assert_eq!(
        spec.check_query("GET", "/v1/payment_intents/search", &search),
        Vec::<String>::new()
    );
    // The balance's list, page by page from `created[gte]`.
    let balance = ridepay::payments::ListBalanceTransactions {
        starting_after: Some("txn_1".to_owned()),
        ..ridepay::payments::ListBalanceTransactions::since(Some(chrono::Utc::now()))
    };
    assert_eq!(
        spec.check_query(
            "GET",
            "/v1/balance_transactions",
            &owned(ridepay::payments::stripe::balance_transactions::list_query(
                &balance
            ))
        ),
        Vec::<String>::new()
    );
    let expand = [(
        "expand[]".to_owned(),
        ridepay::payments::stripe::intents::BALANCE_TRANSACTION.to_owned(),
    )];
    assert_eq!(
        spec.check_query("GET", intent, &expand),
        Vec::<String>::new()
    );
    // The exceptions are needed, each of them, and are all that is needed.
    let (_, hold) = &forms[0];
    assert!(!spec
        .check_form("POST", "/v1/payment_intents", hold, &[])
        .is_empty());
    for needed in NEWER_PARAMETERS {
        let others: Vec<&str> = NEWER_PARAMETERS
            .iter()
            .copied()
            .filter(|parameter| parameter != needed)
            .collect();
        assert!(
            !spec
                .check_form("POST", "/v1/payment_intents", hold, &others)
                .is_empty(),
            "{needed} is not needed"
        );
    }
}

#[test]
fn the_client_makes_accounts_and_links_as_the_specification_takes_them_and_reads_stripes_examples()
{
    use ridepay::payments::stripe::accounts::{account, account_link, create_form, link_form};
    let form = create_form(&ridepay::payments::CreateAccount {
        idempotency_key: "k".to_owned(),
        email: "driver@example.com".to_owned(),
        country: "US".to_owned(),
        metadata: vec![("ridepay_driver".to_owned(), "drv_1".to_owned())],
    });
    assert_eq!(
        spec().check_form("POST", "/v1/accounts", &form, &[]),
        Vec::<String>::new(),
        "{form:?}"
    );
    let example = account(&serde_json::to_vec(&fixtures()["account"]).unwrap()).unwrap();
    assert_eq!(example.id, "acct_1PgafTB7WZ01zgkW");
    assert_eq!(
        example.transfers,
        Some(ridepay::payments::CapabilityStatus::Active)
    );
    assert!(example.can_be_paid() && !example.details_submitted);

    let form = link_form(&ridepay::payments::CreateAccountLink {
        idempotency_key: "k".to_owned(),
        account: "acct_1".to_owned(),
        refresh_url: "https://ridepay.example/drivers/onboarding/t/refresh".to_owned(),
        return_url: "https://ridepay.example/drivers/onboarding/t/return".to_owned(),
    });
    assert_eq!(
        spec().check_form("POST", "/v1/account_links", &form, &[]),
        Vec::<String>::new(),
        "{form:?}"
    );
    let example = account_link(&serde_json::to_vec(&fixtures()["account_link"]).unwrap()).unwrap();
    assert!(example.url.starts_with("https://"), "{example:?}");

    let list = ridepay::payments::ListAccounts {
        starting_after: Some("acct_1".to_owned()),
        ..ridepay::payments::ListAccounts::since(chrono::Utc::now())
    };
    let query: Vec<(String, String)> = ridepay::payments::stripe::accounts::list_query(&list)
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value))
        .collect();
    assert_eq!(
        spec().check_query("GET", "/v1/accounts", &query),
        Vec::<String>::new(),
        "{query:?}"
    );
}

#[test]
fn the_client_reads_stripes_2026_payment_intent_example() {
    let body = serde_json::to_vec(&fixtures()["payment_intent"]).unwrap();
    let intent = ridepay::payments::stripe::intents::payment_intent(&body).unwrap();
    assert_eq!(intent.id, "pi_1PgafyB7WZ01zgkWSjxsAJo3");
    assert_eq!(
        intent.status,
        ridepay::payments::IntentStatus::RequiresPaymentMethod
    );
    assert_eq!(intent.next_action.unwrap().kind, "type");
    assert_eq!(intent.last_payment_error.unwrap().code, None);
}

/// Call version 4 names the PaymentIntent's transfer group and asks for
/// the charge's balance transaction, which expands the charge too (a hold
/// reads its card's room from it); version 3 sends neither, as it did.
#[test]
fn only_a_call_that_asks_for_the_balance_transaction_expands_it_or_names_a_transfer_group() {
    use ridepay::payments::stripe::intents::{capture_form, create_form, BALANCE_TRANSACTION};
    use ridepay::payments::{CaptureIntent, CaptureMethod, CreateIntent, HoldRequest};
    let hold = |transfer_group: Option<&str>, expand_balance_transaction| CreateIntent {
        hold: HoldRequest::RIDE_HAILING,
        transfer_group: transfer_group.map(str::to_owned),
        expand_balance_transaction,
        ..crate::common::gateway::intent_request("k", "pm_card_visa", CaptureMethod::Manual)
    };
    let named = |form: &[(String, String)], name: &str| -> Vec<String> {
        form.iter()
            .filter(|(key, _)| key == name)
            .map(|(_, value)| value.clone())
            .collect()
    };

    let version_3 = create_form(&hold(None, false));
    let version_4 = create_form(&hold(Some("ridepay-ab12"), true));
    let paid_3 = create_form(&CreateIntent {
        capture_method: CaptureMethod::Automatic,
        ..hold(None, false)
    });
    let capture = |expand_balance_transaction| {
        capture_form(&CaptureIntent {
            expand_balance_transaction,
            ..crate::common::gateway::capture_request("k", "pi_1", 1500)
        })
    };

    assert_eq!(named(&version_3, "expand[]"), ["latest_charge"]);
    assert_eq!(named(&version_3, "transfer_group"), Vec::<String>::new());
    assert_eq!(named(&version_4, "expand[]"), [BALANCE_TRANSACTION]);
    assert_eq!(named(&version_4, "transfer_group"), ["ridepay-ab12"]);
    assert_eq!(named(&paid_3, "expand[]"), Vec::<String>::new());
    assert_eq!(named(&capture(false), "expand[]"), Vec::<String>::new());
    assert_eq!(named(&capture(true), "expand[]"), [BALANCE_TRANSACTION]);
}

/// Stripe's 2026 example charge, expanded in its PaymentIntent with its
/// example balance transaction: what a capture's answer brings.
#[test]
fn the_client_reads_stripes_2026_balance_transaction_in_an_expanded_charge() {
    let mut charge = fixtures()["charge"].clone();
    charge["balance_transaction"] = fixtures()["balance_transaction"].clone();
    let mut intent = fixtures()["payment_intent"].clone();
    intent["status"] = json!("succeeded");
    intent["latest_charge"] = charge;
    let read = |intent: &Value| {
        ridepay::payments::stripe::intents::payment_intent(&serde_json::to_vec(intent).unwrap())
            .unwrap()
    };

    let expanded = read(&intent);
    intent["latest_charge"]["balance_transaction"] = json!("txn_1PgaxNB7WZ01zgkWEV3TLf40");
    let by_id = read(&intent);
    intent["latest_charge"]["balance_transaction"] = Value::Null;
    let uncaptured = read(&intent);

    assert_eq!(
        expanded.balance_transaction,
        Some(ridepay::payments::BalanceTransaction {
            id: "txn_1PgaxNB7WZ01zgkWEV3TLf40".to_owned(),
            amount_cents: 100,
            fee_cents: 0,
            net_cents: 100,
            currency: "usd".to_owned(),
            exchange_rate: None,
        })
    );
    assert_eq!(expanded.latest_charge, by_id.latest_charge);
    assert_eq!(
        (by_id.balance_transaction, uncaptured.balance_transaction),
        (None, None)
    );
}

/// Stripe's 2026 example balance transaction, in a page of the balance's
/// list.
#[test]
fn the_client_reads_stripes_2026_balance_transaction_in_a_list() {
    let list = json!({
        "object": "list",
        "data": [fixtures()["balance_transaction"]],
        "has_more": true,
        "url": "/v1/balance_transactions",
    });

    let page =
        ridepay::payments::stripe::balance_transactions::page(&serde_json::to_vec(&list).unwrap())
            .unwrap();

    assert!(page.has_more);
    let [listed] = &page.transactions[..] else {
        panic!("{page:?}");
    };
    assert_eq!(
        (
            listed.kind.as_str(),
            listed.source.as_deref(),
            listed.created.timestamp()
        ),
        ("charge", Some("ch_1PgafuB7WZ01zgkWXYmPNZs8"), 1234567890)
    );
    assert_eq!(
        (listed.transaction.id.as_str(), listed.transaction.net_cents),
        ("txn_1PgaxNB7WZ01zgkWEV3TLf40", 100)
    );
}

#[test]
fn the_client_pins_the_api_version_of_the_vendored_specification() {
    assert_eq!(ridepay::payments::stripe::STRIPE_VERSION, spec().version());
}

/// A list's query as the client builds it, asserted to be one the
/// specification's `GET` at `path` takes.
fn conforming_query(path: &str, query: Vec<(&str, String)>) -> Vec<(String, String)> {
    let query: Vec<(String, String)> = query
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value))
        .collect();
    assert_eq!(
        spec().check_query("GET", path, &query),
        Vec::<String>::new(),
        "{query:?}"
    );
    query
}

/// The client's transfers, reversals and list queries are what the
/// specification takes (no `transfer_group`: Stripe gives the source
/// charge's), and it reads Stripe's 2026 transfer, reversal (alone and in
/// a list) and balance.
#[test]
fn the_client_makes_transfers_and_reversals_as_the_specification_takes_them_and_reads_stripes_examples(
) {
    use ridepay::payments::stripe::transfers::{
        balance, list_query, reversal, reversal_form, reversal_list_query, reversal_page, transfer,
        transfer_form,
    };
    use ridepay::payments::{
        CreateTransfer, CreateTransferReversal, ListTransferReversals, ListTransfers,
    };
    let metadata = vec![("ridepay_key".to_owned(), "k1".to_owned())];
    let form = transfer_form(&CreateTransfer {
        idempotency_key: "k".to_owned(),
        amount_cents: 1600,
        currency: "usd".to_owned(),
        destination: "acct_1".to_owned(),
        source_transaction: "ch_1".to_owned(),
        metadata: metadata.clone(),
    });
    assert_eq!(
        spec().check_form("POST", "/v1/transfers", &form, &[]),
        Vec::<String>::new(),
        "{form:?}"
    );
    assert!(!form.iter().any(|(name, _)| name == "transfer_group"));
    let form = reversal_form(&CreateTransferReversal {
        idempotency_key: "k".to_owned(),
        transfer: "tr_1".to_owned(),
        amount_cents: 500,
        metadata,
    });
    assert_eq!(
        spec().check_form("POST", "/v1/transfers/{id}/reversals", &form, &[]),
        Vec::<String>::new(),
        "{form:?}"
    );
    let list = ListTransfers {
        transfer_group: Some("ridepay-k".to_owned()),
        starting_after: Some("tr_1".to_owned()),
        ..ListTransfers::to_since("acct_1", chrono::Utc::now())
    };
    conforming_query("/v1/transfers", list_query(&list));
    let reversals = ListTransferReversals {
        starting_after: Some("trr_1".to_owned()),
        ..ListTransferReversals::of("tr_1")
    };
    let query = conforming_query(
        "/v1/transfers/{id}/reversals",
        reversal_list_query(&reversals),
    );
    assert_eq!(
        query,
        [
            ("limit".to_owned(), "100".to_owned()),
            ("starting_after".to_owned(), "trr_1".to_owned())
        ]
    );

    let example = |name: &str| serde_json::to_vec(&fixtures()[name]).unwrap();
    let made = transfer(&example("transfer")).unwrap();
    assert_eq!(
        (
            made.id.as_str(),
            made.amount_cents,
            made.destination.as_str(),
            made.source_transaction.as_deref(),
            made.reversals.len()
        ),
        (
            "tr_1Pgc7BB7WZ01zgkWVJfE40RX",
            1100,
            "acct_1PgafTB7WZ01zgkW",
            None,
            0
        )
    );
    let back = reversal(&example("transfer_reversal")).unwrap();
    assert_eq!(
        (back.transfer.as_str(), back.amount_cents),
        ("tr_1Pgc7BB7WZ01zgkWVJfE40RX", 1100)
    );
    let listed = json!({
        "object": "list",
        "data": [fixtures()["transfer_reversal"]],
        "has_more": true,
        "url": "/v1/transfers/tr_1Pgc7BB7WZ01zgkWVJfE40RX/reversals",
    });
    assert_eq!(
        spec().check_response("GET", "/v1/transfers/{id}/reversals", 200, &listed),
        Vec::<String>::new()
    );
    let page = reversal_page(&serde_json::to_vec(&listed).unwrap()).unwrap();
    assert_eq!((page.reversals, page.has_more), (vec![back], true));
    let held = balance(&example("balance")).unwrap();
    assert_eq!((held.available_in("usd"), held.pending_in("usd")), (0, 0));
}
