use troupe_engine::secret_names::*;

/// (name, expected `is_secret_name` verdict): the names the tests check the rule against
/// (shared with the child-env tests).
pub(crate) const TABLE: &[(&str, bool)] = &[
    // Explicit well-known names.
    ("GITHUB_TOKEN", true),
    ("GH_TOKEN", true),
    ("GITLAB_TOKEN", true),
    ("NPM_TOKEN", true),
    ("AWS_ACCESS_KEY_ID", true),
    ("AWS_SECRET_ACCESS_KEY", true),
    ("AWS_SESSION_TOKEN", true),
    ("GOOGLE_APPLICATION_CREDENTIALS", true),
    ("AZURE_CLIENT_SECRET", true),
    ("GEMINI_API_KEY", true),
    ("GOOGLE_API_KEY", true),
    ("OPENAI_API_KEY", true),
    ("ANTHROPIC_API_KEY", true),
    ("HF_TOKEN", true),
    ("HUGGING_FACE_HUB_TOKEN", true),
    ("PGPASSWORD", true),
    ("MYSQL_PWD", true),
    // Suffix rules.
    ("MY_SERVICE_API_KEY", true),
    ("STRIPE_APIKEY", true),
    ("SLACK_BOT_TOKEN", true),
    ("CARGO_REGISTRY_TOKEN", true),
    ("GITHUB_PAT", true),
    ("DOCKER_PASSWORD", true),
    ("LDAP_PASSWD", true),
    ("SERVICE_CREDENTIALS", true),
    ("DEPLOY_PRIVATE_KEY", true),
    ("ANTHROPIC_AUTH_TOKEN", true),
    ("ACTIONS_ID_TOKEN_REQUEST_TOKEN", true),
    // Bare suffix words.
    ("TOKEN", true),
    ("API_KEY", true),
    ("PASSWORD", true),
    // `_SECRET` anywhere, `SECRET_` prefix, `SECRET` itself.
    ("CLIENT_SECRET", true),
    ("JWT_SECRET_KEY", true),
    ("MY_SECRETS_DIR", true),
    ("SECRET_KEY_BASE", true),
    ("SECRET", true),
    // Case-insensitive.
    ("github_token", true),
    ("OpenAI_Api_Key", true),
    ("secret_key", true),
    ("my_app_password", true),
    // Not secret.
    ("PATH", false),
    ("HOME", false),
    ("USER", false),
    ("SHELL", false),
    ("TERM", false),
    ("LANG", false),
    ("PWD", false),
    ("OLDPWD", false),
    ("TOKENIZERS_PARALLELISM", false),
    ("GIT_ASKPASS", false),
    ("SSH_AUTH_SOCK", false),
    ("DATABASE_URL", false),
    ("AWS_PROFILE", false),
    ("AWS_REGION", false),
    ("KUBECONFIG", false),
    ("GITHUB_TOKEN_PATH", false),
    ("TOKEN_FILE", false),
    ("MY_TOKENS", false),
    ("SECRETARY", false),
    ("SECRETS", false),
    ("PATH_TO_KEYS", false),
    ("PATTERN", false),
    ("XDG_CONFIG_HOME", false),
    ("RUST_LOG", false),
    ("CARGO_HOME", false),
    ("ACTIONS_ID_TOKEN_REQUEST_URL", false),
    ("", false),
];

#[test]
fn secret_name_table() {
    assert!(TABLE.len() >= 40);
    let wrong: Vec<_> = TABLE
        .iter()
        .filter(|(name, want)| is_secret_name(name) != *want)
        .collect();
    assert!(wrong.is_empty(), "misclassified: {wrong:?}");
}

#[test]
fn secret_config_arguments_in_every_spelling() {
    let args: Vec<&[u8]> = vec![
        b"troupe",
        b"-c",
        b"model.gemini.api_key=k1",
        b"--config",
        b"model.max_turns=3",
        b"--config=model.openai.api_key=k2",
        b"-cmodel.gemini.api_key=k3",
        b"-c=mcp.x.github_token = k4",
        b"-c",
        b"model.gemini.api_key=",
        b"-p",
        b"-c model.gemini.api_key=spaced",
        b"--",
        b"-c",
        b"model.gemini.api_key=after-dashes",
    ];
    let found: Vec<(usize, String, String)> = secret_config_arguments(&args)
        .into_iter()
        .map(|s| {
            let value = String::from_utf8_lossy(&args[s.index][s.value]).into_owned();
            (s.index, s.key, value)
        })
        .collect();
    assert_eq!(
        found,
        [
            (2, "model.gemini.api_key".into(), "k1".into()),
            (5, "model.openai.api_key".into(), "k2".into()),
            (6, "model.gemini.api_key".into(), "k3".into()),
            (7, "mcp.x.github_token".into(), " k4".into()),
            (11, "model.gemini.api_key".into(), "spaced".into()),
        ]
    );
    // A trailing `-c` with nothing after it.
    assert!(secret_config_arguments(&[b"troupe".as_slice(), b"-c"]).is_empty());
}
