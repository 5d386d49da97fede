"""Build quality.json, the labelled retrieval set used to compare the search engine with BM25.

The set is written as Python data so that entries and the questions they answer sit next to
each other and can be reviewed together; answers are referenced by readable labels and only
turned into ``e001``-style keys at the end, so inserting an entry never silently shifts the
answer of an unrelated question. Ages and importances come from a fixed-seed RNG: they only
matter for ranking features, not for relevance. Run ``python build_quality.py``; it refuses to
write a file that breaks the invariants the benchmark relies on.
"""

from __future__ import annotations

import json
import random
import re
import sys
import unicodedata
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, for search.query

from search.query import edit_distance_one  # noqa: E402

ENTRIES: list[tuple[str, str, str, str, list[str], str]] = []
QUESTIONS: list[tuple[str, str, str, tuple[str, ...]]] = []
KINDS = {"q": "question", "p": "paraphrase", "t": "typo", "k": "keywords", "x": "prefix"}


def E(label: str, agent: str, category: str, lang: str, tags: str, content: str) -> None:
    ENTRIES.append((label, agent, category, lang, tags.split(), content.strip()))


def Q(kind: str, lang: str, q: str, *answers: str) -> None:
    QUESTIONS.append((KINDS[kind], lang, q, answers))


# =============================================================================================
# backend
# =============================================================================================
A = "backend"
E(
    "pg_ledger",
    A,
    "decisions",
    "en",
    "postgres ledger decision",
    "We decided to use PostgreSQL 16 for the payments ledger because we need ACID transactions and "
    "serializable isolation for double-entry postings. MongoDB was rejected: multi-document "
    "transactions were too slow in the load test and the auditors want plain SQL access. #decision #postgres",
)
E(
    "ledger_cents",
    A,
    "decisions",
    "en",
    "ledger money",
    "Money amounts in the ledger are stored as BIGINT cents with an ISO-4217 currency column, never as "
    "float. Rounding happens only at display time, using banker's rounding.",
)
E(
    "idempotency",
    A,
    "decisions",
    "en",
    "api payments idempotency",
    "All POST endpoints of payments-api require an Idempotency-Key header. Keys are kept in Redis for "
    "24h together with a hash of the response; reusing a key with a different body returns 422.",
)
E(
    "redis_sessions",
    A,
    "decisions",
    "en",
    "redis sessions portal",
    "We dropped Redis for web sessions on the merchant portal. Sessions now live in signed cookies plus a "
    "PostgreSQL table for revocation. The Redis cluster kept evicting keys under memory pressure and "
    "merchants were logged out at random.",
)
E(
    "temporal_payouts",
    A,
    "decisions",
    "pt",
    "payouts temporal celery",
    "Decidimos trocar o Celery pelo Temporal nos fluxos de repasse aos lojistas. Os workflows longos, que "
    "esperam a confirmação do banco, se perdiam quando o worker reiniciava; o Temporal guarda o estado e "
    "faz retentativas com histórico. #decisão",
)
E(
    "webhook_retry",
    A,
    "decisions",
    "en",
    "webhooks",
    "Outgoing merchant webhooks are retried with exponential backoff: 1m, 5m, 30m, 2h, 12h, then moved to "
    "a dead-letter table visible in the portal. Every delivery is signed with HMAC-SHA256 using the "
    "merchant's secret.",
)
E(
    "api_versioning",
    A,
    "decisions",
    "en",
    "api",
    "API versioning: date-based versions in the Pagora-Version header (e.g. 2024-06-01) instead of /v2 "
    "URLs. Breaking changes ship under a new date and old versions are supported for 18 months.",
)
E(
    "pix_qr",
    A,
    "decisions",
    "pt",
    "pix checkout",
    "No Pix, geramos QR Code dinâmico pelo PSP parceiro em vez de estático: o dinâmico traz o txid e "
    "facilita a conciliação automática. Expiração padrão de 30 minutos no checkout.",
)
E(
    "n_plus_one",
    A,
    "lessons",
    "en",
    "performance django postmortem",
    "Post-mortem: the merchant statements endpoint took 14 s because of an N+1 query, each transaction "
    "lazy-loaded its fees. Fixed with select_related/prefetch_related and added a query-count assertion "
    "to the test suite.",
)
E(
    "double_charge",
    A,
    "lessons",
    "pt",
    "incidente idempotencia mobile",
    "Lição do incidente de março: clientes foram cobrados duas vezes porque o app repetia o POST quando o "
    "timeout do gateway estourava, e a chave de idempotência era gerada de novo a cada tentativa. Agora a "
    "chave é criada uma única vez por intenção de pagamento.",
)
E(
    "tz_settlement",
    A,
    "lessons",
    "en",
    "timezone settlement bug",
    "Bug: settlement reports for Brazilian merchants were off by one day. The batch cut the day using the "
    "server clock (UTC) instead of America/Sao_Paulo. Store UTC, convert at the boundary with an explicit zone.",
)
E(
    "migration_lock",
    A,
    "lessons",
    "pt",
    "postgres migração",
    "Nunca adicionar coluna com DEFAULT volátil numa tabela grande em horário comercial: a migração da "
    "tabela transactions travou as escritas por 6 minutos. Criar a coluna nula, fazer backfill em lotes e "
    "só depois colocar NOT NULL.",
)
E(
    "pgbouncer",
    A,
    "lessons",
    "en",
    "postgres pgbouncer blackfriday",
    "payments-api ran out of database connections on Black Friday: 40 pods x 20 connections blew past "
    "max_connections=500. We put PgBouncer in transaction mode in front of PostgreSQL and cut the Django "
    "pool to 5 per pod.",
)
E(
    "refund_tasks",
    A,
    "tasks",
    "en",
    "refunds todo",
    "Refund API v2:\n- [x] partial refunds\n- [ ] refund reason enum\n- [ ] notify the merchant by webhook "
    "when the refund settles\n- [ ] block refunds older than 180 days",
)
E(
    "boleto_tasks",
    A,
    "tasks",
    "pt",
    "boleto todo",
    "- [ ] Registrar boleto pela API do banco parceiro\n- [ ] Tratar o arquivo de retorno CNAB 240\n"
    "- [x] Calcular multa e juros depois do vencimento",
)
E(
    "ledger_project",
    A,
    "projects",
    "en",
    "ledger project",
    "Ledger project: a double-entry ledger service in Django on PostgreSQL. Every payment creates balanced "
    "postings (debit customer, credit merchant, credit fees). Owner: Ana. Goal: retire the balance columns "
    "of the legacy monolith by Q3.",
)
E(
    "payouts_project",
    A,
    "projects",
    "pt",
    "repasses pix projeto",
    "Projeto Repasses: pagar os lojistas em D+1 via Pix, com agenda configurável (diária ou semanal). "
    "Depende do Temporal e da conciliação bancária. Responsável: Rafael.",
)
E(
    "installment_fees",
    A,
    "handoffs",
    "en",
    "fees handoff",
    "[User]: the fee calculation for installments looks wrong [Agent]: Found it: installment fees were "
    "applied per installment instead of on the total. Fix is on branch fix/installment-fees, tests pass, "
    "needs Ana's review before merge.",
)
E(
    "pix_webhook_dup",
    A,
    "handoffs",
    "pt",
    "pix webhook handoff",
    "[User]: o webhook do Pix está chegando duplicado [Agent]: Confirmei, o PSP reenvia quando a gente "
    "responde depois de 5 s. Deixei o handler idempotente pelo endToEndId e respondendo 200 antes de "
    "processar. Falta o deploy em produção.",
)
E(
    "fts_search",
    A,
    "decisions",
    "en",
    "search postgres",
    "For merchant transaction search we use PostgreSQL full-text search with a GIN index instead of "
    "Elasticsearch: 30M rows is small and we avoid running another cluster.",
)
E(
    "rate_limits",
    A,
    "decisions",
    "en",
    "api redis ratelimit",
    "Public API rate limits: 100 requests/s per merchant key, token bucket in Redis; 429 responses carry "
    "Retry-After. Enterprise partners get 500 requests/s.",
)
E(
    "outbox",
    A,
    "decisions",
    "pt",
    "kafka debezium eventos",
    "Adotamos o padrão outbox: eventos de pagamento são gravados na mesma transação do PostgreSQL e o "
    "Debezium publica no Kafka. Acabou a perda de eventos quando o publish falhava depois do commit.",
)
E(
    "kafka_offsets",
    A,
    "lessons",
    "en",
    "kafka ledger postmortem",
    "Lesson: the ledger consumer committed Kafka offsets before writing the postings, so a crash lost 212 "
    "events. Commit after processing and make handlers idempotent by event id.",
)
E(
    "fx_decimal",
    A,
    "lessons",
    "pt",
    "câmbio bug",
    "A conversão cambial de USD para BRL perdia centavos porque o fx-rates usava float. Passamos para "
    "Decimal com 6 casas na taxa e arredondamento só no valor final.",
)
E(
    "chargebacks",
    A,
    "projects",
    "en",
    "chargebacks adyen",
    "Chargeback handling: card networks send disputes through Adyen notifications; we open a case, freeze "
    "the amount in the merchant balance and give the merchant 7 days to upload evidence in the portal.",
)
E(
    "openapi_tasks",
    A,
    "tasks",
    "en",
    "api docs todo",
    "- [ ] publish the OpenAPI spec for version 2024-06-01\n- [ ] add examples for Pix charges\n"
    "- [ ] remove the deprecated /charges/capture docs",
)
E(
    "django_upgrade",
    A,
    "tasks",
    "pt",
    "django upgrade",
    "Atualização do Django 4.2 para 5.1:\n- [x] rodar a suíte com avisos de depreciação como erro\n"
    "- [ ] trocar o pytz por zoneinfo\n- [ ] revisar o middleware de sessão customizado",
)
E(
    "celery_queue",
    A,
    "lessons",
    "en",
    "celery queue",
    "The email queue in Celery backed up to 80k tasks because one task retried forever on an SMTP 550. Set "
    "max_retries and route permanent failures to a dead-letter queue.",
)
E(
    "db_read_replica",
    A,
    "decisions",
    "en",
    "postgres replica reports",
    "Merchant reports and CSV exports read from the PostgreSQL read replica; anything that writes or needs "
    "read-your-writes (balance, payouts) must use the primary. Replica lag alert at 30 s.",
)
E(
    "cache_merchant_cfg",
    A,
    "decisions",
    "pt",
    "cache redis",
    "Configuração do lojista (taxas, métodos habilitados) fica em cache local de processo por 60 s, não no "
    "Redis: o dado muda pouco e economizamos uma ida à rede em toda requisição de pagamento.",
)
E(
    "handoff_refund",
    A,
    "handoffs",
    "en",
    "refunds handoff",
    "Session handoff: partial refunds merged and deployed to staging. Remaining: the refund reason enum "
    "(waiting on PM wording) and the 180-day block. Do not deploy to production before the ledger "
    "migration 0042 runs.",
)
E(
    "handoff_boleto",
    A,
    "handoffs",
    "pt",
    "boleto handoff",
    "Passagem de sessão: o parser do CNAB 240 lê os arquivos de retorno do banco, mas falha em linhas com "
    "ocorrência 28 (tarifas). Próximo passo: mapear as ocorrências com o financeiro e escrever teste com "
    "arquivo real anonimizado.",
)
E(
    "pay_proj_ctx",
    A,
    "projects",
    "en",
    "payments architecture",
    "payments-api is a Django monolith split into apps: charges, refunds, payouts, merchants. It calls card "
    "acquirers through Adyen and Pix through our PSP partner; events go out through the outbox to Kafka.",
)
E(
    "uuid_keys",
    A,
    "decisions",
    "en",
    "postgres ids",
    "New tables use UUIDv7 primary keys: sortable by time, safe to expose in URLs, and no sequence "
    "contention across shards. Existing bigint ids stay.",
)
E(
    "soft_delete",
    A,
    "decisions",
    "pt",
    "dados lgpd",
    "Não usamos soft delete nas tabelas de clientes: para atender a LGPD, a exclusão anonimiza os dados "
    "pessoais e mantém só o que a lei fiscal exige guardar por 5 anos.",
)
E(
    "json_logs",
    A,
    "decisions",
    "en",
    "logging observability",
    "Backend services log JSON lines with request_id, merchant_id and trace_id; no PII in logs, card "
    "numbers are masked to the last four digits by a logging filter.",
)

Q("q", "en", "what did we decide about the database for payments?", "pg_ledger")
Q("q", "en", "why did we drop Redis for sessions?", "redis_sessions")
Q("q", "en", "how are webhooks retried when the merchant endpoint is down?", "webhook_retry")
Q("q", "en", "how do we version the public API?", "api_versioning")
Q("q", "pt", "por que trocamos o Celery pelo Temporal?", "temporal_payouts")
Q("q", "pt", "por que o cliente foi cobrado duas vezes?", "double_charge")
Q("q", "en", "why were settlement reports off by one day?", "tz_settlement")
Q("q", "pt", "como fazer migração em tabela grande sem travar?", "migration_lock")
Q("q", "en", "what happened with database connections on Black Friday?", "pgbouncer")
Q("q", "pt", "o webhook do Pix está duplicado, o que foi feito?", "pix_webhook_dup")
Q("q", "en", "what is the rate limit for the public API?", "rate_limits")
Q("q", "en", "which queries can go to the read replica?", "db_read_replica")
Q("q", "en", "what is left to do on refunds?", "refund_tasks", "handoff_refund")
Q("p", "en", "which relational store holds the money records and why not a document db?", "pg_ledger")
Q(
    "p",
    "en",
    "how do we avoid charging a customer twice when a request is repeated?",
    "idempotency",
    "double_charge",
)
Q("p", "en", "merchants kept getting signed out of the portal", "redis_sessions")
Q("p", "pt", "como evitamos perder mensagens quando a publicação falha após gravar no banco?", "outbox")
Q("p", "en", "monetary values representation and rounding rule", "ledger_cents")
Q("p", "en", "listing page was slow because every row fetched its charges separately", "n_plus_one")
Q("p", "pt", "valores em dólar convertidos para real perdiam frações", "fx_decimal")
Q("t", "en", "postgers ledger decision", "pg_ledger")
Q("t", "en", "idempotncy key header", "idempotency")
Q("t", "pt", "conciliaçao do Pix com QR Code dinâmico", "pix_qr")
Q("t", "en", "chargeback evidnce upload", "chargebacks")
Q("t", "en", "kafka ofsets lost events", "kafka_offsets")
Q("t", "pt", "arquivo de retrono CNAB", "boleto_tasks", "handoff_boleto")
Q("k", "en", "installment fees bug", "installment_fees")
Q("k", "en", "merchant search GIN", "fts_search")
Q("k", "pt", "Django atualização zoneinfo", "django_upgrade")
Q("k", "en", "UUIDv7 primary keys", "uuid_keys")
Q("k", "pt", "LGPD exclusão anonimiza", "soft_delete")
Q("x", "en", "idempot POST", "idempotency")
Q("x", "pt", "repas D+1", "payouts_project")
Q("x", "en", "chargeb dispu", "chargebacks")

# =============================================================================================
# frontend
# =============================================================================================
A = "frontend"
E(
    "nextjs_checkout",
    A,
    "decisions",
    "en",
    "checkout nextjs decision",
    "Checkout web moves from the old Angular app to Next.js with server-side rendering. First paint on "
    "3G dropped from 4.1 s to 1.6 s in the pilot, and SSR lets us render the order summary without "
    "waiting for client JavaScript. #decision #checkout",
)
E(
    "vite_portal",
    A,
    "decisions",
    "en",
    "portal vite",
    "The merchant portal stays a single-page app built with Vite and React; SEO does not matter behind "
    "login and we avoid running a Node server for it. Webpack was removed, cold builds went from 90 s to 12 s.",
)
E(
    "tanstack_query",
    A,
    "decisions",
    "pt",
    "react estado",
    "Decidimos usar TanStack Query para o estado vindo do servidor no portal do lojista e abandonar o "
    "Redux para isso. O Redux fica só para o estado de UI do editor de links de pagamento.",
)
E(
    "design_tokens",
    A,
    "decisions",
    "en",
    "design-system tokens",
    "Design system: colors, spacing and typography are design tokens exported from Figma to a JSON file "
    "and compiled to CSS variables; components never hardcode hex values.",
)
E(
    "tailwind_no",
    A,
    "decisions",
    "pt",
    "css design-system",
    "Não vamos adotar Tailwind no design system: os componentes já usam CSS Modules com tokens e a "
    "migração custaria duas sprints sem ganho para o usuário.",
)
E(
    "i18n_lib",
    A,
    "decisions",
    "en",
    "i18n",
    "Internationalization uses FormatJS (react-intl) with ICU messages; translations live in "
    "locales/pt-BR.json and locales/en.json and are extracted in CI. Currency is always formatted with "
    "Intl.NumberFormat and the merchant's locale.",
)
E(
    "hydration_bug",
    A,
    "lessons",
    "en",
    "nextjs bug ssr",
    "Lesson: the checkout showed a hydration mismatch warning and a flicker of the price because the "
    "server rendered dates in UTC and the browser in local time. Format dates only on the client or pass "
    "the timezone explicitly.",
)
E(
    "csp_lesson",
    A,
    "lessons",
    "pt",
    "segurança csp checkout",
    "Aprendizado: ao ligar a Content-Security-Policy estrita no checkout, o iframe do 3-D Secure do "
    "adquirente parou de carregar. Liberamos o domínio do ACS em frame-src e criamos um teste E2E que "
    "passa pelo desafio.",
)
E(
    "bundle_size",
    A,
    "lessons",
    "en",
    "performance bundle",
    "The portal bundle grew to 2.3 MB because moment.js with all locales was imported by a chart "
    "component. Replaced with date-fns and lazy-loaded the charts route; bundle is now 780 KB.",
)
E(
    "a11y_audit",
    A,
    "tasks",
    "en",
    "a11y todo",
    "Accessibility audit of checkout:\n- [ ] focus trap in the card form modal\n- [ ] aria-live for "
    "payment errors\n- [x] contrast of the secondary button\n- [ ] keyboard navigation in the "
    "installments picker",
)
E(
    "portal_tasks_pt",
    A,
    "tasks",
    "pt",
    "portal todo",
    "- [ ] Tela de extrato com filtro por período e exportação CSV\n- [ ] Paginação por cursor na lista "
    "de vendas\n- [x] Mostrar status do repasse no dashboard",
)
E(
    "checkout_project",
    A,
    "projects",
    "en",
    "checkout project",
    "Checkout v3 project: hosted payment page used by 1,200 merchants. Supports card, Pix and boleto; "
    "target conversion +3 pp. Owner: Marina. Launch planned for September with 10% of traffic first.",
)
E(
    "portal_project",
    A,
    "projects",
    "pt",
    "portal projeto",
    "Portal do lojista: onde o lojista vê vendas, repasses, disputas e configura links de pagamento. "
    "Feito em React com Vite, consome a API pública com token de sessão. Responsável: Beatriz.",
)
E(
    "handoff_storybook",
    A,
    "handoffs",
    "en",
    "storybook handoff",
    "[User]: why are the Storybook visual tests failing on CI? [Agent]: Chromatic snapshots differ only "
    "in font rendering; CI switched to a new Ubuntu image without the Inter font. Added the font to the "
    "Docker image, re-ran, all green.",
)
E(
    "handoff_links_pt",
    A,
    "handoffs",
    "pt",
    "links handoff",
    "[User]: termina o editor de link de pagamento [Agent]: Editor pronto com pré-visualização e validação "
    "de valor mínimo. Falta traduzir as mensagens de erro para inglês e o teste E2E do fluxo de cópia do "
    "link.",
)
E(
    "feature_flags_fe",
    A,
    "decisions",
    "en",
    "feature-flags",
    "Feature flags in the frontends come from Unleash through the BFF; flags are evaluated server-side so "
    "that a merchant never sees a half-released screen. Remove a flag within 30 days of 100% rollout.",
)
E(
    "e2e_playwright",
    A,
    "decisions",
    "pt",
    "testes e2e",
    "Migramos os testes E2E do Cypress para o Playwright: roda em paralelo de graça, suporta WebKit (Safari "
    "no iPhone é metade do tráfego do checkout) e a suíte caiu de 22 para 7 minutos.",
)
E(
    "flaky_checkout",
    A,
    "lessons",
    "en",
    "flaky testing checkout",
    "The flaky checkout E2E test was failing about one run in ten because it clicked Pay before the card "
    "iframe finished loading. Wait for the iframe's ready message instead of a fixed sleep; never use "
    "waitForTimeout.",
)
E(
    "cls_fix",
    A,
    "lessons",
    "pt",
    "performance web-vitals",
    "O CLS do checkout estava em 0,31 por causa do banner de cookies injetado depois do carregamento. "
    "Reservamos o espaço do banner no layout e o CLS caiu para 0,02.",
)
E(
    "fe_deploy",
    A,
    "projects",
    "en",
    "deploy vercel",
    "Frontend deploys: checkout-web runs on Vercel with preview deployments per pull request; the merchant "
    "portal is a static build uploaded to S3 behind CloudFront by GitHub Actions on merge to main.",
)
E(
    "cdn_cache_lesson",
    A,
    "lessons",
    "en",
    "cache cdn",
    "After a release the portal showed a blank page for some users: index.html was cached by CloudFront "
    "for 24 h while the old hashed JS files were deleted. index.html now has Cache-Control: no-cache and old "
    "assets are kept for 7 days.",
)
E(
    "forms_lib",
    A,
    "decisions",
    "en",
    "forms",
    "Forms use React Hook Form with Zod schemas shared with the BFF, so validation rules for CPF, CNPJ and "
    "card fields are defined once.",
)
E(
    "cpf_mask_pt",
    A,
    "lessons",
    "pt",
    "formulário bug",
    "Bug no formulário: a máscara de CPF apagava o dígito quando o usuário colava o número com pontos. "
    "Trocamos a máscara por normalização no onChange e validação pelo dígito verificador.",
)
E(
    "dark_mode_task",
    A,
    "tasks",
    "en",
    "ux todo",
    "- [ ] dark mode for the merchant portal using the token themes\n- [ ] respect prefers-reduced-motion "
    "in the onboarding animations\n- [ ] empty states for disputes and payouts",
)
E(
    "handoff_i18n_pt",
    A,
    "handoffs",
    "pt",
    "i18n handoff",
    "Passagem: extraí as mensagens novas do checkout com o formatjs, 38 chaves sem tradução em en.json. "
    "Pedi para a Carla revisar o português das mensagens de erro de cartão recusado.",
)
E(
    "web_vitals_proj",
    A,
    "projects",
    "en",
    "performance",
    "Web performance budget: LCP under 2.5 s and INP under 200 ms at p75 on the checkout, measured by "
    "real-user monitoring in Datadog RUM. Regressions block the release train.",
)
E(
    "sentry_fe",
    A,
    "decisions",
    "pt",
    "observabilidade sentry",
    "Erros de frontend vão para o Sentry com source maps enviados no build; o replay de sessão fica "
    "desligado no checkout para não capturar dados de cartão.",
)
E(
    "graphql_no",
    A,
    "decisions",
    "en",
    "graphql bff",
    "We will not expose GraphQL to the portal; the BFF aggregates REST calls and returns view-shaped JSON. "
    "GraphQL would add a schema layer nobody on the team maintains.",
)

Q("q", "en", "why did we move checkout to Next.js?", "nextjs_checkout")
Q("q", "en", "why isn't the merchant portal server-side rendered?", "vite_portal")
Q("q", "pt", "vamos usar Tailwind no design system?", "tailwind_no")
Q("q", "en", "fix the flaky checkout test", "flaky_checkout")
Q("q", "pt", "por que migramos do Cypress para o Playwright?", "e2e_playwright")
Q("q", "en", "why did users see a blank page after the portal release?", "cdn_cache_lesson")
Q("q", "en", "how is the frontend deployed?", "fe_deploy")
Q("q", "pt", "o 3-D Secure parou de carregar depois da CSP, como resolvemos?", "csp_lesson")
Q("q", "en", "what are the accessibility tasks for checkout?", "a11y_audit")
Q("q", "pt", "qual biblioteca usamos para estado do servidor no portal?", "tanstack_query")
Q(
    "p",
    "en",
    "the price flickered on first load because server and browser disagreed on time",
    "hydration_bug",
)
Q("p", "en", "javascript download for the dashboard got too heavy", "bundle_size")
Q("p", "pt", "layout pulando por causa do aviso de cookies", "cls_fix")
Q("p", "en", "where do colour and spacing values come from in components?", "design_tokens")
Q(
    "p",
    "en",
    "snapshot comparisons broke because a typeface was missing on the build machine",
    "handoff_storybook",
)
Q("p", "pt", "campo de documento do comprador perdia números ao colar", "cpf_mask_pt")
Q("t", "en", "hydraton mismatch checkout", "hydration_bug")
Q("t", "en", "Storybok visual tests", "handoff_storybook")
Q("t", "pt", "máscara de CPF apagava dígitos ao colar numero", "cpf_mask_pt")
Q("t", "en", "translatons pt-BR locales", "i18n_lib", "handoff_i18n_pt")
Q("t", "en", "accessibilty audit focus trap", "a11y_audit")
Q("t", "pt", "paginaçao por cursor extrato", "portal_tasks_pt")
Q("k", "en", "Unleash flags BFF", "feature_flags_fe")
Q("k", "en", "LCP INP budget", "web_vitals_proj")
Q("k", "pt", "Sentry replay checkout", "sentry_fe")
Q("k", "en", "React Hook Form Zod", "forms_lib")
Q("x", "en", "Playwr WebKit", "e2e_playwright")
Q("x", "en", "GraphQ BFF", "graphql_no")
Q("x", "pt", "link de pagam pré-visual", "handoff_links_pt")

# =============================================================================================
# devops
# =============================================================================================
A = "devops"
E(
    "eks_choice",
    A,
    "decisions",
    "en",
    "kubernetes aws decision",
    "We run all services on Amazon EKS rather than ECS: we want Helm charts, the Kubernetes ecosystem "
    "(ArgoCD, KEDA, external-secrets) and a path to run the same manifests on GKE for the disaster "
    "recovery site.",
)
E(
    "argocd_gitops",
    A,
    "decisions",
    "en",
    "deploy gitops argocd",
    "Deployment is GitOps with ArgoCD: CI builds the image and bumps the tag in the deploy repo; ArgoCD "
    "syncs to the cluster. Nobody runs kubectl apply against production by hand.",
)
E(
    "terraform_state",
    A,
    "decisions",
    "pt",
    "terraform infra",
    "O estado do Terraform fica no S3 com trava no DynamoDB, um state por ambiente e por domínio (rede, "
    "dados, cluster). Módulos versionados em repositório separado com tags semver.",
)
E(
    "karpenter",
    A,
    "decisions",
    "en",
    "kubernetes autoscaling cost",
    "Replaced cluster-autoscaler with Karpenter; nodes come up in about 50 s instead of 4 min and spot "
    "instances cut the compute bill by 38%. Payments pods stay on on-demand nodes via a nodeSelector.",
)
E(
    "secrets_vault",
    A,
    "decisions",
    "pt",
    "segredos vault segurança",
    "Segredos das aplicações vêm do AWS Secrets Manager pelo external-secrets operator; nada de segredo "
    "em variável do Helm ou no repositório. Rotação automática a cada 90 dias para credenciais de banco.",
)
E(
    "dns_ttl_lesson",
    A,
    "lessons",
    "en",
    "dns incident",
    "Lesson from the failover drill: the api.pagora.com record had a TTL of 86400, so clients kept hitting "
    "the dead region for hours. All public records now use TTL 60 and the drill runs every quarter.",
)
E(
    "cert_expired",
    A,
    "lessons",
    "pt",
    "tls incidente",
    "Incidente: o certificado TLS do endpoint de webhooks dos parceiros expirou num domingo porque era "
    "emitido manualmente. Migramos para cert-manager com Let's Encrypt e alerta 14 dias antes do "
    "vencimento.",
)
E(
    "oom_lesson",
    A,
    "lessons",
    "en",
    "kubernetes oom",
    "payments-api pods were OOMKilled every few hours after the Python 3.12 upgrade. The memory limit was "
    "512Mi with no headroom; gunicorn workers now use max_requests=1000 and the limit is 1Gi with requests "
    "at 768Mi.",
)
E(
    "probe_lesson",
    A,
    "lessons",
    "pt",
    "kubernetes deploy",
    "Deploy travado: a readiness probe do ledger-service apontava para /health na porta 8000, mas o "
    "serviço escutava na 8080. Os pods nunca ficavam prontos e o rollout ficou parado 40 minutos.",
)
E(
    "deploy_mobile_ci",
    A,
    "projects",
    "pt",
    "mobile ci deploy",
    "Pipeline do app mobile: o GitHub Actions roda lint e testes; o build e a assinatura do Android e do "
    "iOS ficam no EAS Build da Expo; a publicação nas lojas sai pelo Fastlane com aprovação manual do QA.",
)
E(
    "observability_stack",
    A,
    "projects",
    "en",
    "observability prometheus grafana",
    "Observability stack: Prometheus + Grafana for metrics, Loki for logs, Tempo for traces, all fed by "
    "OpenTelemetry collectors. Alerts go to PagerDuty; dashboards as code in the grafana/ folder.",
)
E(
    "slo_payments",
    A,
    "decisions",
    "en",
    "slo observability",
    "SLOs for payments-api: 99.95% availability and p99 under 800 ms for POST /charges, measured over 28 "
    "days. Burn-rate alerts at 2% and 5% of the error budget per hour.",
)
E(
    "canary",
    A,
    "decisions",
    "pt",
    "deploy canário",
    "Deploy do payments-api é canário com Argo Rollouts: 5%, 25%, 50% e 100%, com análise automática da "
    "taxa de erro e da latência p99 no Prometheus entre cada passo; rollback automático se falhar.",
)
E(
    "dr_plan",
    A,
    "projects",
    "en",
    "disaster-recovery",
    "Disaster recovery: primary region sa-east-1, warm standby in us-east-1 with PostgreSQL cross-region "
    "replica. RPO 5 minutes, RTO 1 hour. The runbook lives in runbooks/dr-failover.md.",
)
E(
    "ci_cache",
    A,
    "lessons",
    "en",
    "ci cache",
    "CI was taking 25 minutes because the Docker layer cache was invalidated by copying the whole repo "
    "before installing dependencies. Copy the lock files first, install, then copy the source; builds now "
    "take 6 minutes.",
)
E(
    "cost_tasks",
    A,
    "tasks",
    "en",
    "finops todo",
    "Cost review:\n- [ ] delete unattached EBS volumes\n- [ ] move CloudWatch logs older than 30 days to "
    "S3 Glacier\n- [x] buy a one-year savings plan for the database instances\n- [ ] tag every resource "
    "with team and env",
)
E(
    "k8s_upgrade_tasks",
    A,
    "tasks",
    "pt",
    "kubernetes todo",
    "- [ ] Atualizar o Kubernetes (EKS) de 1.28 para 1.29 em homologação\n- [ ] Trocar APIs depreciadas nos charts "
    "(PodDisruptionBudget v1)\n- [ ] Testar o Karpenter com a nova AMI",
)
E(
    "handoff_argocd",
    A,
    "handoffs",
    "en",
    "argocd handoff",
    "[User]: ArgoCD shows the checkout app as OutOfSync forever [Agent]: The HPA mutates replicas and Argo "
    "sees a diff. Added ignoreDifferences for /spec/replicas in the Application; it is Synced now.",
)
E(
    "handoff_dr_pt",
    A,
    "handoffs",
    "pt",
    "dr handoff",
    "Passagem de sessão: o teste de failover para us-east-1 rodou até a promoção da réplica; faltou "
    "trocar o DNS porque o Route 53 health check estava desligado. Retomar amanhã com o Tom.",
)
E(
    "ingress_nginx",
    A,
    "decisions",
    "en",
    "ingress networking",
    "Ingress: AWS Load Balancer Controller with ALBs for public traffic; internal service-to-service calls "
    "go through plain ClusterIP services. We dropped the ingress-nginx controller after the CVE scare.",
)
E(
    "log_retention",
    A,
    "decisions",
    "pt",
    "logs custo",
    "Retenção de logs: 14 dias no Loki para consulta rápida e 1 ano no S3 para auditoria. Logs de debug "
    "não vão para produção.",
)
E(
    "runner_lesson",
    A,
    "lessons",
    "en",
    "ci github-actions",
    "Self-hosted GitHub Actions runners filled their disks with Docker images and jobs failed with 'no "
    "space left on device'. Runners are now ephemeral pods from actions-runner-controller.",
)
E(
    "redis_ha",
    A,
    "decisions",
    "en",
    "redis infra",
    "Redis for rate limiting and idempotency keys runs on ElastiCache with cluster mode and Multi-AZ; "
    "losing it is tolerated for 60 s because payments fall back to the database check.",
)
E(
    "pg_rds",
    A,
    "decisions",
    "pt",
    "postgres rds banco",
    "O PostgreSQL de produção roda no Amazon RDS com Multi-AZ, backups de 35 dias e PITR. Aurora foi "
    "descartado pelo custo de I/O com o volume de escrita do ledger.",
)
E(
    "oncall",
    A,
    "projects",
    "en",
    "oncall",
    "On-call: weekly rotation across platform engineers, handover on Monday 10:00 BRT. Pager only for "
    "customer-facing symptoms; everything else goes to the #alerts-low channel.",
)
E(
    "tf_drift",
    A,
    "lessons",
    "pt",
    "terraform drift",
    "Lição: alguém alterou o security group do RDS pelo console e o próximo terraform apply reverteu, "
    "derrubando a conexão do Metabase. Agora temos detecção de drift diária e acesso ao console só leitura.",
)
E(
    "image_scan",
    A,
    "tasks",
    "en",
    "security ci todo",
    "- [ ] scan images with Trivy in CI and fail on critical CVEs\n- [ ] sign images with cosign\n- [ ] "
    "enforce signed images with Kyverno in production",
)
E(
    "handoff_helm",
    A,
    "handoffs",
    "en",
    "helm handoff",
    "Where I stopped: extracted the common Helm library chart (deployment, service, HPA, PDB). Migrated "
    "ledger-service and payments-api; notification-worker still uses the old chart. Values schema is in "
    "charts/common/values.schema.json.",
)
E(
    "preview_envs",
    A,
    "projects",
    "pt",
    "ambientes preview",
    "Ambientes efêmeros: cada PR com o label preview ganha um namespace com o serviço e um banco "
    "PostgreSQL descartável; é destruído 48 h depois do merge.",
)

Q("q", "en", "why do we use EKS instead of ECS?", "eks_choice")
Q("q", "en", "how do deployments reach production?", "argocd_gitops", "canary")
Q("q", "pt", "onde fica o estado do Terraform?", "terraform_state")
Q("q", "en", "what are the SLOs for payments-api?", "slo_payments")
Q("q", "en", "why did the failover drill take hours?", "dns_ttl_lesson")
Q("q", "pt", "por que o rollout do ledger-service ficou travado?", "probe_lesson")
Q("q", "en", "why are payments-api pods getting OOMKilled?", "oom_lesson")
Q("q", "en", "what are the RPO and RTO for disaster recovery?", "dr_plan")
Q("q", "pt", "por que não usamos Aurora?", "pg_rds")
Q("q", "en", "ArgoCD keeps showing OutOfSync, how was it fixed?", "handoff_argocd")
Q("p", "en", "which tool spins up worker machines now, and how much money did it save?", "karpenter")
Q("p", "pt", "onde as aplicações buscam senhas e credenciais?", "secrets_vault")
Q("p", "en", "the partner callback endpoint broke on a Sunday because its https cert lapsed", "cert_expired")
Q("p", "en", "pipeline builds were slow because layers were rebuilt every time", "ci_cache")
Q("p", "pt", "alteração manual na nuvem foi desfeita pelo código de infraestrutura", "tf_drift")
Q("p", "en", "where do metrics, traces and logs go?", "observability_stack")
Q("t", "pt", "atualizar kuberntes EKS", "k8s_upgrade_tasks")
Q("t", "en", "Karpentr spot instances", "karpenter")
Q("t", "pt", "certifcado TLS expirou webhooks", "cert_expired")
Q("t", "pt", "rolback automático canário", "canary")
Q("t", "en", "ephemral runners disk space", "runner_lesson")
Q("t", "pt", "retençao de logs Loki", "log_retention")
Q("t", "en", "disater recovery runbook", "dr_plan", "handoff_dr_pt")
Q("k", "en", "Trivy cosign Kyverno", "image_scan")
Q("k", "en", "Helm library chart", "handoff_helm")
Q("k", "pt", "failover Route 53", "handoff_dr_pt")
Q("k", "en", "ElastiCache Multi-AZ fallback", "redis_ha")
Q("k", "en", "on-call rotation pager", "oncall")
Q("x", "pt", "kube atualiz homolog", "k8s_upgrade_tasks")
Q("x", "en", "observab stack", "observability_stack")
Q("x", "pt", "ambientes efêm PR", "preview_envs")
Q("x", "en", "ingre ALB", "ingress_nginx")

# =============================================================================================
# data
# =============================================================================================
A = "data"
E(
    "snowflake_choice",
    A,
    "decisions",
    "en",
    "warehouse snowflake decision",
    "The analytics warehouse is Snowflake. BigQuery was a close second, but our data is in AWS and egress "
    "costs from S3 to GCP would exceed the license difference. Redshift was rejected for operational "
    "overhead (vacuum, resizing).",
)
E(
    "airflow_dbt",
    A,
    "decisions",
    "pt",
    "airflow dbt pipeline",
    "Orquestração com Airflow (MWAA) e transformações em dbt. O Airflow só dispara e monitora; nenhuma "
    "regra de negócio fica em operador Python, tudo vira modelo dbt testado.",
)
E(
    "cdc_debezium",
    A,
    "decisions",
    "en",
    "cdc kafka",
    "Operational tables reach the warehouse through CDC: Debezium reads the PostgreSQL WAL, publishes to "
    "Kafka and the Snowflake Kafka connector lands raw rows every 5 minutes. No more nightly full dumps.",
)
E(
    "late_events",
    A,
    "lessons",
    "en",
    "pipeline events bug",
    "Lesson: daily GMV was under-reported because late-arriving mobile events (offline phones syncing "
    "next morning) were dropped by the partition filter. The model now reprocesses the last 3 days on every "
    "run.",
)
E(
    "dedup_lesson",
    A,
    "lessons",
    "pt",
    "dbt duplicados",
    "Os pagamentos apareciam duplicados no painel de receita porque o conector reentregava mensagens após "
    "rebalanceamento do Kafka. Deduplicamos no dbt com row_number por id do evento e ordem do offset.",
)
E(
    "dbt_tests",
    A,
    "decisions",
    "en",
    "dbt testing quality",
    "Every dbt model needs unique and not_null tests on its primary key, and source freshness checks on "
    "raw tables; a failing test blocks downstream models in the Airflow DAG.",
)
E(
    "pii_masking",
    A,
    "decisions",
    "pt",
    "lgpd pii dados",
    "Dados pessoais (CPF, e-mail, telefone) chegam ao warehouse já mascarados por hash com sal; só o papel "
    "PII_READER, concedido pelo DPO, enxerga a coluna original numa tabela separada.",
)
E(
    "metabase",
    A,
    "decisions",
    "en",
    "bi dashboards",
    "Business dashboards are in Metabase on top of Snowflake marts; Looker was too expensive for 40 "
    "viewers. Only models in the marts schema are exposed, never staging.",
)
E(
    "fraud_features",
    A,
    "projects",
    "en",
    "fraud ml",
    "Fraud scoring project: a gradient-boosted model (LightGBM) scores every card payment in under 50 ms. "
    "Features such as velocity per card, device fingerprint and merchant category are served from a "
    "Redis-backed feature store.",
)
E(
    "gmv_def",
    A,
    "decisions",
    "pt",
    "métricas definições",
    "Definição oficial de GMV: soma dos pagamentos aprovados menos estornos no mesmo mês, em BRL, na data "
    "de aprovação (fuso de São Paulo). Chargebacks não entram no GMV; têm métrica própria.",
)
E(
    "airflow_backfill",
    A,
    "lessons",
    "en",
    "airflow backfill",
    "Never trigger a backfill for a year of data with catchup on a DAG with max_active_runs unset: 365 runs "
    "started at once and exhausted the Snowflake warehouse credits for the month.",
)
E(
    "data_tasks",
    A,
    "tasks",
    "en",
    "data todo",
    "- [ ] add freshness SLA to the payouts source\n- [ ] document the churn model columns\n- [x] "
    "migrate the cohort dashboard to the new marts\n- [ ] partition the events table by day",
)
E(
    "data_tasks_pt",
    A,
    "tasks",
    "pt",
    "dados todo",
    "- [ ] Criar modelo dbt de conciliação entre ledger e extrato bancário\n- [ ] Alertar no Slack quando o "
    "teste de freshness falhar\n- [ ] Revisar custo do warehouse por time",
)
E(
    "recon_project",
    A,
    "projects",
    "pt",
    "conciliação projeto",
    "Projeto Conciliação: cruzar diariamente o ledger com os extratos bancários e os arquivos do "
    "adquirente; divergências acima de R$ 1,00 abrem um caso para o financeiro. Dono: Gustavo.",
)
E(
    "handoff_churn",
    A,
    "handoffs",
    "en",
    "ml handoff",
    "[User]: how is the merchant churn model doing? [Agent]: AUC 0.81 on the October holdout, down from "
    "0.84. Feature drift is in average ticket; retraining with the last 6 months is queued for tonight.",
)
E(
    "handoff_dbt_pt",
    A,
    "handoffs",
    "pt",
    "dbt handoff",
    "[User]: o modelo de receita quebrou no dbt [Agent]: A coluna fee_amount foi renomeada no ledger e o "
    "source não foi atualizado. Corrigi o source, rodei dbt build no modelo e nos dependentes; dados de "
    "ontem reprocessados.",
)
E(
    "spark_no",
    A,
    "decisions",
    "en",
    "spark",
    "We do not run Spark: all transformations fit in Snowflake SQL. The one Python-heavy job (fraud "
    "features) uses Polars on a single large instance.",
)
E(
    "iceberg",
    A,
    "projects",
    "en",
    "lake iceberg",
    "Raw event archive: Parquet files in S3 organized as Apache Iceberg tables, partitioned by day, "
    "queryable from Snowflake external tables and Athena. Kept for 5 years for compliance.",
)
E(
    "timezone_dash",
    A,
    "lessons",
    "pt",
    "dashboard fuso",
    "O painel de vendas por hora mostrava pico às 3 da manhã: a coluna vinha em UTC e o Metabase não "
    "convertia. Criamos colunas *_brt no mart e padronizamos o fuso do relatório.",
)
E(
    "great_expectations",
    A,
    "decisions",
    "en",
    "data-quality",
    "We dropped Great Expectations; dbt tests plus elementary cover our checks with far less setup. "
    "Anomaly detection on volume runs in elementary with Slack alerts.",
)
E(
    "cost_snowflake",
    A,
    "lessons",
    "en",
    "cost warehouse",
    "Snowflake bill doubled in May because a Metabase dashboard refreshed every minute on an XL warehouse. "
    "Dashboards now use a dedicated XS warehouse with auto-suspend at 60 s and result caching.",
)
E(
    "event_schema",
    A,
    "decisions",
    "pt",
    "eventos schema",
    "Eventos de produto seguem um contrato com JSON Schema versionado no repositório events-schema; o "
    "Kafka rejeita mensagens que não validam (schema registry com compatibilidade backward).",
)
E(
    "ab_testing",
    A,
    "projects",
    "en",
    "experiments",
    "Experimentation: A/B tests assigned in the BFF with a stable hash of the user id; results computed in "
    "dbt with CUPED variance reduction. Minimum run of 14 days to cover two weekly cycles.",
)
E(
    "kpi_tasks",
    A,
    "handoffs",
    "en",
    "kpi handoff",
    "Session handoff: the approval-rate dashboard now splits by acquirer and card brand. Still missing: the "
    "Pix conversion funnel, blocked on the mobile events for QR code copied.",
)

Q("q", "en", "why did we choose Snowflake over BigQuery?", "snowflake_choice")
Q("q", "pt", "onde fica a regra de negócio dos pipelines, no Airflow ou no dbt?", "airflow_dbt")
Q("q", "en", "how do operational tables get into the warehouse?", "cdc_debezium")
Q("q", "en", "why was daily GMV under-reported?", "late_events")
Q("q", "pt", "por que os pagamentos aparecem duplicados no painel de receita?", "dedup_lesson")
Q("q", "pt", "qual é a definição oficial de GMV?", "gmv_def")
Q("q", "en", "what happened when we backfilled a year of data?", "airflow_backfill")
Q("q", "en", "how is the churn model performing?", "handoff_churn")
Q("q", "pt", "o modelo de receita do dbt quebrou, o que foi feito?", "handoff_dbt_pt")
Q("q", "en", "why did the Snowflake bill double?", "cost_snowflake")
Q("q", "en", "do we use Spark?", "spark_no")
Q("p", "en", "which BI tool shows business charts and why not the pricier one?", "metabase")
Q("p", "pt", "quem pode ver o documento e o e-mail dos clientes no data warehouse?", "pii_masking")
Q("p", "en", "how quickly do we judge whether a card purchase is suspicious?", "fraud_features")
Q("p", "pt", "gráfico de vendas mostrava movimento de madrugada por erro de horário", "timezone_dash")
Q("p", "en", "how long must a split test run?", "ab_testing")
Q("p", "pt", "cruzamento diário entre contabilidade interna e banco", "recon_project")
Q("t", "en", "Snowflak warehouse decision", "snowflake_choice")
Q("t", "pt", "rebalanceamnto Kafka duplicados", "dedup_lesson")
Q("t", "en", "late-arriving evnts partition", "late_events")
Q("t", "en", "Debezim CDC warehouse", "cdc_debezium")
Q("t", "pt", "mascaramento dados pessoias", "pii_masking")
Q("t", "en", "Great Expectatons elementary", "great_expectations")
Q("k", "en", "Iceberg Parquet archive", "iceberg")
Q("k", "pt", "JSON Schema eventos registry", "event_schema")
Q("k", "en", "dbt unique not_null freshness", "dbt_tests")
Q("k", "en", "approval rate dashboard acquirer", "kpi_tasks")
Q("x", "en", "Snowfl auto-susp", "cost_snowflake")
Q("x", "pt", "concilia extrato bancá", "recon_project", "data_tasks_pt")
Q("x", "en", "experim CUPED", "ab_testing")

# =============================================================================================
# mobile
# =============================================================================================
A = "mobile"
E(
    "rn_choice",
    A,
    "decisions",
    "en",
    "mobile react-native decision",
    "The Pagora Wallet app is built with React Native and Expo instead of two native apps: one team of "
    "five ships both platforms and shares validation code with the web checkout. Card scanning and "
    "biometrics use native modules.",
)
E(
    "ota_updates",
    A,
    "decisions",
    "pt",
    "mobile expo updates",
    "Atualizações OTA com EAS Update só para correções de JavaScript; qualquer mudança em módulo nativo ou "
    "permissão exige versão nova na loja. Canal production só recebe update depois de 24 h no canal beta.",
)
E(
    "secure_storage",
    A,
    "decisions",
    "en",
    "mobile security tokens",
    "Auth tokens on the phone are stored in the Keychain (iOS) and EncryptedSharedPreferences/Keystore "
    "(Android) via expo-secure-store, never in AsyncStorage. Refresh tokens rotate on every use.",
)
E(
    "offline_queue",
    A,
    "decisions",
    "pt",
    "mobile offline",
    "No app, ações feitas sem internet (como marcar cobrança como recebida) entram numa fila local no "
    "SQLite e são sincronizadas quando a conexão volta, com chave de idempotência gerada no aparelho.",
)
E(
    "push_lesson",
    A,
    "lessons",
    "en",
    "push notifications bug",
    "Push notifications stopped arriving on Android 13+ after the SDK bump because we never requested the "
    "POST_NOTIFICATIONS runtime permission. Ask for it after the first sale, not on launch; opt-in rate went "
    "from 41% to 67%.",
)
E(
    "deeplink_lesson",
    A,
    "lessons",
    "pt",
    "deep-link bug",
    "Links de cobrança abertos pelo WhatsApp caíam na tela inicial em vez do pagamento: o Android App Links "
    "não estava verificado porque o assetlinks.json tinha o fingerprint do certificado de debug. Corrigido "
    "com o SHA-256 da chave de upload da Play Store.",
)
E(
    "hermes_crash",
    A,
    "lessons",
    "en",
    "crash ios",
    "Crash on startup for 2% of iOS users after release 3.8.0: a date library called Intl APIs missing in "
    "older Hermes builds. Hotfix via EAS Update in 3 hours; we now run the smoke suite on the oldest "
    "supported iOS (15).",
)
E(
    "mobile_release",
    A,
    "projects",
    "en",
    "mobile release",
    "Mobile release train: a build every two weeks on Tuesday, staged rollout on Google Play (10%, 50%, "
    "100%) and phased release on the App Store. Release captain rotates; checklist in docs/mobile-release.md.",
)
E(
    "mobile_project_pt",
    A,
    "projects",
    "pt",
    "mobile projeto",
    "App Pagora Carteira: o lojista pequeno cobra por Pix e link de pagamento, vê as vendas do dia e "
    "recebe o repasse. 180 mil usuários ativos por mês, 78% Android. Responsável: Thiago.",
)
E(
    "tap_to_pay",
    A,
    "projects",
    "en",
    "tap-to-pay nfc",
    "Tap to Pay project: accept contactless cards on the merchant's own phone (NFC) using the Adyen "
    "SDK. Android first; iOS needs Apple's entitlement, requested in August.",
)
E(
    "mobile_tasks",
    A,
    "tasks",
    "en",
    "mobile todo",
    "- [ ] biometric login on Android with BiometricPrompt fallback to PIN\n- [ ] reduce APK size below 30 "
    "MB\n- [x] migrate to the new architecture (Fabric)\n- [ ] crash-free sessions alert below 99.5%",
)
E(
    "mobile_tasks_pt",
    A,
    "tasks",
    "pt",
    "mobile todo",
    "- [ ] Tela de comprovante do Pix com compartilhamento\n- [ ] Modo escuro seguindo o sistema\n- [ ] "
    "Corrigir teclado cobrindo o campo de valor no Android pequeno",
)
E(
    "handoff_mobile_build",
    A,
    "handoffs",
    "en",
    "mobile build handoff",
    "[User]: the iOS build is failing on EAS [Agent]: CocoaPods could not resolve the Adyen pod after the "
    "Xcode 16 image update. Pinned the pod to 5.6.1 and cleared the cache; build 412 is green and "
    "uploaded to TestFlight.",
)
E(
    "handoff_mobile_pt",
    A,
    "handoffs",
    "pt",
    "mobile handoff",
    "Passagem de sessão: corrigi o teclado cobrindo o campo de valor usando KeyboardAvoidingView com "
    "offset por plataforma. Falta testar no Galaxy A10 do laboratório e abrir o PR.",
)
E(
    "mobile_analytics",
    A,
    "decisions",
    "en",
    "analytics mobile",
    "Mobile analytics events go to Segment and from there to Snowflake and Amplitude; event names follow "
    "object_action in snake_case (charge_created, qr_copied). No personal data in event properties.",
)
E(
    "app_size",
    A,
    "lessons",
    "pt",
    "mobile tamanho",
    "O APK passou de 45 MB porque as animações Lottie do onboarding estavam em JSON gigante e havia fontes "
    "duplicadas. Com App Bundle, compressão das animações e remoção das fontes, caiu para 27 MB.",
)
E(
    "mobile_api_bff",
    A,
    "decisions",
    "pt",
    "bff mobile api",
    "O app conversa só com o mobile-bff, nunca direto com o payments-api; o BFF junta as chamadas da tela "
    "inicial numa só e permite mudar contrato sem forçar atualização do app.",
)
E(
    "flaky_detox",
    A,
    "lessons",
    "en",
    "testing mobile flaky",
    "Detox tests on the Android emulator were flaky because animations kept running; disable animations "
    "in the emulator settings and wait on testIDs instead of sleeps. Failure rate dropped from 18% to 1%.",
)
E(
    "min_versions",
    A,
    "decisions",
    "en",
    "mobile support",
    "Minimum supported versions: Android 8 (API 26) and iOS 15. Below that we show a blocking update "
    "screen; together they were 1.4% of sessions.",
)
E(
    "qr_scanner_pt",
    A,
    "lessons",
    "pt",
    "câmera qr",
    "A leitura de QR Code falhava em aparelhos Motorola com câmera de foco fixo. Passamos a usar o "
    "VisionCamera com o scanner de código nativo e a lanterna automática em ambiente escuro.",
)

Q("q", "pt", "como configuramos o deploy do app mobile?", "deploy_mobile_ci", "mobile_release")
Q("q", "en", "why did we build the app with React Native?", "rn_choice")
Q("q", "pt", "quando podemos usar atualização OTA?", "ota_updates")
Q("q", "en", "where are auth tokens stored on the phone?", "secure_storage")
Q("q", "en", "why did push notifications stop on Android 13?", "push_lesson")
Q("q", "pt", "por que os links abertos pelo WhatsApp caíam na tela inicial?", "deeplink_lesson")
Q("q", "en", "what caused the crash on startup in 3.8.0?", "hermes_crash")
Q("q", "en", "how often do we release the mobile app?", "mobile_release")
Q("q", "en", "the iOS build fails on EAS, what did we do last time?", "handoff_mobile_build")
Q("q", "pt", "o app pode chamar o payments-api direto?", "mobile_api_bff")
Q("p", "en", "which phone OS versions do we still support?", "min_versions")
Q("p", "pt", "o que acontece quando o lojista fica sem sinal e registra algo?", "offline_queue")
Q("p", "en", "accepting contactless cards on the seller's own handset", "tap_to_pay")
Q("p", "pt", "o instalador Android ficou pesado demais", "app_size")
Q("p", "en", "UI automation on the emulator kept failing randomly", "flaky_detox")
Q("p", "pt", "celulares com foco fixo não liam o código de pagamento", "qr_scanner_pt")
Q("t", "en", "biometic login Android", "mobile_tasks")
Q("t", "pt", "teclado cobrindo campo de valr", "mobile_tasks_pt", "handoff_mobile_pt")
Q("t", "en", "notificatons permission opt-in rate", "push_lesson")
Q("t", "en", "Amplitde event names", "mobile_analytics")
Q("t", "pt", "animaçoes Lottie tamanho APK", "app_size")
Q("t", "en", "CocoaPod Adyen Xcode", "handoff_mobile_build")
Q("k", "en", "Tap to Pay NFC", "tap_to_pay")
Q("k", "pt", "assetlinks fingerprint certificado", "deeplink_lesson")
Q("k", "en", "Keychain secure-store AsyncStorage", "secure_storage")
Q("k", "pt", "Pagora Carteira usuários ativos", "mobile_project_pt")
Q("x", "en", "Hermes Intl crash start", "hermes_crash")
Q("x", "pt", "comprov Pix compartilh", "mobile_tasks_pt")
Q("x", "en", "Detox emul", "flaky_detox")

# =============================================================================================
# security
# =============================================================================================
A = "security"
E(
    "keycloak",
    A,
    "decisions",
    "en",
    "auth sso decision",
    "Employee and merchant authentication goes through Keycloak (OIDC). Auth0 was rejected because "
    "per-MAU pricing with 300k merchants was too expensive and we need to host identity data in Brazil.",
)
E(
    "mfa_policy",
    A,
    "decisions",
    "pt",
    "autenticação mfa",
    "Autenticação em dois fatores obrigatória para lojistas que mudam a conta bancária de repasse ou "
    "criam chaves de API. Aceitamos TOTP e passkeys; SMS só como última opção por causa de SIM swap.",
)
E(
    "pci_scope",
    A,
    "decisions",
    "en",
    "pci compliance cards",
    "To keep PCI DSS scope small, card numbers never touch our services: the checkout uses the acquirer's "
    "hosted fields and we only store tokens in card-vault. Only card-vault and its database are in the "
    "CDE segment.",
)
E(
    "api_keys",
    A,
    "decisions",
    "en",
    "api keys security",
    "Merchant API keys are shown once, stored as SHA-256 hashes with a visible prefix (pk_live_ab12...) "
    "for identification, scoped (read, charges, refunds) and expire after one year unless rotated.",
)
E(
    "token_leak",
    A,
    "lessons",
    "pt",
    "incidente segredo",
    "Incidente: um token do GitHub com escopo de repo vazou num log de CI público do projeto de SDK. "
    "Revogamos em 20 minutos; agora o gitleaks roda em pré-commit e no CI, e tokens pessoais foram "
    "trocados por GitHub App com escopo mínimo.",
)
E(
    "ssrf_lesson",
    A,
    "lessons",
    "en",
    "ssrf webhooks pentest",
    "The pentest found an SSRF: merchants could register a webhook URL pointing at 169.254.169.254 and read "
    "instance metadata. Webhook URLs are now resolved and blocked for private ranges, and IMDSv2 is "
    "enforced on all nodes.",
)
E(
    "csrf_lesson",
    A,
    "lessons",
    "pt",
    "csrf portal",
    "Falha de CSRF no portal: o endpoint de troca de conta bancária aceitava form POST sem token porque "
    "estava marcado como csrf_exempt para a integração antiga. Removemos a exceção e a integração passou a "
    "usar chave de API.",
)
E(
    "lgpd_project",
    A,
    "projects",
    "pt",
    "lgpd privacidade",
    "Programa LGPD: inventário de dados pessoais por serviço, base legal documentada, atendimento aos "
    "titulares em até 15 dias pelo portal de privacidade e relatório de impacto para o antifraude. DPO: "
    "Renata.",
)
E(
    "pentest_tasks",
    A,
    "tasks",
    "en",
    "pentest todo",
    "Pentest remediation:\n- [x] block private IP ranges in webhook URLs\n- [ ] add rate limit to login "
    "and password reset\n- [ ] set SameSite=Strict on the admin console cookie\n- [ ] remove the server "
    "version banner from Nginx",
)
E(
    "sec_tasks_pt",
    A,
    "tasks",
    "pt",
    "segurança todo",
    "- [ ] Rotacionar a chave de criptografia do card-vault (KMS)\n- [ ] Revisar permissões do IAM do time "
    "de dados\n- [ ] Treinamento anual de phishing para todos",
)
E(
    "waf",
    A,
    "decisions",
    "en",
    "waf cloudflare",
    "Public endpoints sit behind Cloudflare WAF with the OWASP ruleset and bot management; the checkout "
    "also has a per-IP rate limit of 30 card attempts per 10 minutes to stop card testing.",
)
E(
    "card_testing",
    A,
    "lessons",
    "en",
    "fraud card-testing incident",
    "Card-testing attack on a small merchant's checkout: 9,000 authorization attempts in 2 hours with "
    "stolen cards, mostly declines. Acquirer fees cost R$ 4k. Added velocity rules per merchant and a "
    "CAPTCHA after 3 declines.",
)
E(
    "handoff_sec",
    A,
    "handoffs",
    "en",
    "security handoff",
    "[User]: is the Nginx version banner fixed? [Agent]: Yes, server_tokens off is deployed to the "
    "ingress config, verified with curl -I. The SameSite cookie change for the admin console is still "
    "open, needs QA.",
)
E(
    "handoff_sec_pt",
    A,
    "handoffs",
    "pt",
    "segurança handoff",
    "Passagem: revisei as permissões IAM do time de dados; três usuários tinham AdministratorAccess "
    "herdado de um grupo antigo. Removi o grupo e abri chamado para o Gustavo confirmar os acessos.",
)
E(
    "encryption",
    A,
    "decisions",
    "pt",
    "criptografia kms",
    "Criptografia: dados em repouso com AWS KMS (chave por ambiente), TLS 1.2+ em trânsito, e envelope "
    "encryption com chave por lojista para documentos do KYC no S3.",
)
E(
    "session_timeout",
    A,
    "decisions",
    "en",
    "sessions auth",
    "Admin console sessions expire after 15 minutes idle and 8 hours absolute; the merchant portal after "
    "2 hours idle. Changing password or bank account revokes all other sessions.",
)
E(
    "dependency_policy",
    A,
    "decisions",
    "en",
    "dependencies supply-chain",
    "Dependency updates: Renovate opens grouped PRs weekly; security patches are merged within 7 days for "
    "high and 48 hours for critical CVEs. New libraries need a quick license and maintenance review.",
)
E(
    "kyc_docs",
    A,
    "projects",
    "en",
    "kyc onboarding",
    "KYC onboarding: merchants upload ID and proof of address; documents are checked by an external "
    "provider and stored encrypted for 5 years. Manual review queue for mismatches, SLA 24 hours.",
)
E(
    "audit_log",
    A,
    "decisions",
    "pt",
    "auditoria",
    "Toda ação administrativa (estorno manual, mudança de taxa, acesso a dado pessoal) gera registro no "
    "audit-trail, imutável, com quem, quando e o antes/depois. Retenção de 5 anos.",
)
E(
    "phishing_lesson",
    A,
    "lessons",
    "en",
    "phishing",
    "A support agent entered their password on a fake Google login page; MFA with a hardware key blocked "
    "the attacker. Lesson: security keys for all staff with admin access, not just engineers.",
)

Q("q", "en", "why did we choose Keycloak instead of Auth0?", "keycloak")
Q("q", "pt", "quando o lojista precisa de autenticação em dois fatores?", "mfa_policy")
Q("q", "en", "how do we keep PCI scope small?", "pci_scope")
Q("q", "en", "how are merchant API keys stored?", "api_keys")
Q("q", "pt", "o que fizemos depois que o token do GitHub vazou?", "token_leak")
Q("q", "en", "what did the pentest find in webhooks?", "ssrf_lesson", "pentest_tasks")
Q("q", "en", "how do we stop card testing attacks?", "card_testing", "waf")
Q("q", "en", "when do admin console sessions expire?", "session_timeout")
Q("q", "pt", "quem é o DPO e como atendemos os titulares?", "lgpd_project")
Q("q", "en", "how fast must we patch critical CVEs?", "dependency_policy")
Q("p", "pt", "o formulário de mudança de conta bancária aceitava envio forjado", "csrf_lesson")
Q("p", "en", "server-side request to the cloud metadata address", "ssrf_lesson")
Q("p", "en", "someone typed their credentials into a fake sign-in page", "phishing_lesson")
Q("p", "pt", "quem alterou uma taxa manualmente fica registrado?", "audit_log")
Q("p", "en", "how do we verify the identity of new sellers?", "kyc_docs")
Q("t", "en", "Keyclaok OIDC", "keycloak")
Q("t", "pt", "autenticaçao dois fatores passkeys", "mfa_policy")
Q("t", "en", "pentset remediation", "pentest_tasks")
Q("t", "pt", "criptogafia KMS chave por lojista", "encryption")
Q("t", "en", "dependncy updates Renovate", "dependency_policy")
Q("t", "pt", "permissoes IAM time de dados", "sec_tasks_pt", "handoff_sec_pt")
Q("k", "en", "WAF OWASP bot management", "waf")
Q("k", "en", "server_tokens banner", "handoff_sec", "pentest_tasks")
Q("k", "pt", "gitleaks pré-commit", "token_leak")
Q("k", "en", "hardware security keys", "phishing_lesson")
Q("x", "en", "pentes rate lim login", "pentest_tasks")
Q("x", "pt", "audit imutáv", "audit_log")

# =============================================================================================
# pm
# =============================================================================================
A = "pm"
E(
    "pricing_decision",
    A,
    "decisions",
    "en",
    "pricing decision",
    "Pricing for small merchants: flat 0.99% for Pix and 3.49% for credit cards, no monthly fee. We "
    "rejected the tiered plan because merchants in interviews could not predict what they would pay.",
)
E(
    "roadmap_q3",
    A,
    "projects",
    "en",
    "roadmap",
    "Q3 roadmap priorities: 1) Checkout v3 launch, 2) D+1 payouts via Pix, 3) Tap to Pay on Android. "
    "Split payments for marketplaces moved to Q4 after the legal review.",
)
E(
    "marketplace_split",
    A,
    "projects",
    "pt",
    "marketplace split",
    "Pagamento dividido para marketplaces (split): o marketplace define as regras de divisão por pedido e "
    "o ledger lança para cada recebedor. Adiado para o Q4 porque o jurídico precisa avaliar a "
    "responsabilidade por chargebacks.",
)
E(
    "client_mercado",
    A,
    "projects",
    "pt",
    "cliente mercado-azul",
    "Cliente Mercado Azul (rede de 40 supermercados): quer Pix no caixa com QR dinâmico e conciliação por "
    "loja. Contrato assinado em maio; go-live previsto em 3 lojas piloto de Campinas.",
)
E(
    "client_farmabem",
    A,
    "projects",
    "en",
    "client farmabem",
    "Client FarmaBem (pharmacy chain): integrates through the public API for e-commerce, needs recurring "
    "billing for subscription medicines and split between franchise owners. Contact: Letícia (CTO).",
)
E(
    "recurring_decision",
    A,
    "decisions",
    "pt",
    "assinaturas cobrança recorrente",
    "Cobrança recorrente: vamos construir dentro do payments-api em vez de integrar um fornecedor de "
    "assinaturas. Os clientes grandes pediram controle das regras de retentativa de cartão recusado "
    "(dunning).",
)
E(
    "nps_lesson",
    A,
    "lessons",
    "en",
    "nps product",
    "The NPS drop in April (from 52 to 38) came from merchants not understanding when payouts arrive. "
    "Adding the expected payout date on every sale in the app brought it back to 50 in two months.",
)
E(
    "onboarding_funnel",
    A,
    "lessons",
    "pt",
    "onboarding conversão",
    "O funil de cadastro perdia 35% dos lojistas na etapa de envio de documentos. Deixar o envio para "
    "depois da primeira venda (com limite de R$ 2 mil até o KYC) aumentou a ativação em 18%.",
)
E(
    "pm_tasks",
    A,
    "tasks",
    "en",
    "pm todo",
    "- [ ] write PRD for marketplace split payments\n- [ ] schedule interviews with 5 FarmaBem franchise "
    "owners\n- [x] define launch metrics for Checkout v3\n- [ ] align payout communication with support",
)
E(
    "pm_tasks_pt",
    A,
    "tasks",
    "pt",
    "pm todo",
    "- [ ] Levantar requisitos do Mercado Azul para o caixa\n- [ ] Revisar contrato de SLA com o jurídico\n"
    "- [ ] Definir mensagem de lançamento do repasse D+1",
)
E(
    "handoff_pm",
    A,
    "handoffs",
    "en",
    "pm handoff",
    "[User]: summarize the FarmaBem call [Agent]: They need recurring billing by October and split between "
    "franchise owners. Recurring is on our Q4 plan; split depends on the legal review. Follow-up call next "
    "Thursday with Letícia.",
)
E(
    "handoff_pm_pt",
    A,
    "handoffs",
    "pt",
    "pm handoff",
    "[User]: resume a reunião com o Mercado Azul [Agent]: Querem Pix no caixa em 3 lojas piloto até "
    "agosto, com relatório de conciliação por loja. Dúvida aberta: integração com o sistema de frente de "
    "caixa deles (Linx).",
)
E(
    "sla_support",
    A,
    "decisions",
    "en",
    "support sla",
    "Support SLA for enterprise merchants: first response in 1 hour during business hours, 4 hours for "
    "others; P1 incidents (payments down) page on-call immediately, 24/7.",
)
E(
    "launch_checkout",
    A,
    "projects",
    "en",
    "launch checkout",
    "Checkout v3 launch plan: 10% of merchants in week 1, 50% in week 3, 100% in week 5 if conversion is "
    "not lower than v2 and error rate stays below 0.5%. Kill switch per merchant in the admin console.",
)
E(
    "competitor_note",
    A,
    "projects",
    "pt",
    "mercado concorrência",
    "Concorrência: os concorrentes cobram taxa de antecipação de 2% a 3% ao mês; nossa vantagem é o repasse "
    "D+1 sem custo extra no Pix. Lojistas de serviços (salão, academia) são o segmento que mais converte.",
)
E(
    "deprecate_v1",
    A,
    "decisions",
    "en",
    "api deprecation",
    "Deprecating the legacy v1 charges API: sunset on March 31; the 60 merchants still using it got three "
    "emails and a migration guide. Calls after the sunset return 410 Gone.",
)

Q("q", "en", "what is our pricing for small merchants?", "pricing_decision")
Q("q", "en", "what are the Q3 roadmap priorities?", "roadmap_q3")
Q("q", "pt", "por que o split para marketplaces foi adiado?", "marketplace_split", "roadmap_q3")
Q("q", "pt", "o que o Mercado Azul precisa?", "client_mercado", "handoff_pm_pt")
Q("q", "en", "what does FarmaBem need from us?", "client_farmabem", "handoff_pm")
Q("q", "pt", "vamos usar fornecedor de assinaturas para cobrança recorrente?", "recurring_decision")
Q("q", "en", "why did NPS drop in April?", "nps_lesson")
Q("q", "en", "when is the v1 charges API turned off?", "deprecate_v1")
Q("p", "pt", "muitos lojistas desistiam do cadastro na hora de mandar documentos", "onboarding_funnel")
Q("p", "en", "how fast do we answer big customers who open a ticket?", "sla_support")
Q("p", "en", "gradual rollout percentages for the new hosted payment page", "launch_checkout")
Q("p", "pt", "quanto os rivais cobram para adiantar recebíveis?", "competitor_note")
Q("t", "en", "pricng Pix credit cards", "pricing_decision")
Q("t", "pt", "recorrente dunnig cartão recusado", "recurring_decision")
Q("t", "en", "franchse owners split", "client_farmabem", "handoff_pm")
Q("k", "en", "Checkout v3 kill switch", "launch_checkout")
Q("k", "pt", "Linx frente de caixa", "handoff_pm_pt")
Q("x", "en", "deprec sunset", "deprecate_v1")

# =============================================================================================
# qa
# =============================================================================================
A = "qa"
E(
    "test_strategy",
    A,
    "decisions",
    "en",
    "testing strategy",
    "Test strategy: unit tests in each service, contract tests with Pact between the BFFs and "
    "payments-api, and a thin E2E layer (about 40 Playwright scenarios) for money-moving flows only.",
)
E(
    "sandbox_acquirer",
    A,
    "decisions",
    "pt",
    "sandbox testes adquirente",
    "Testes de integração usam o sandbox do adquirente com cartões de teste; nunca cartão real. Para Pix, "
    "temos um simulador interno do PSP que gera os webhooks de pagamento e devolução.",
)
E(
    "flaky_quarantine",
    A,
    "decisions",
    "en",
    "flaky ci",
    "Flaky tests go to quarantine: tagged @flaky, excluded from the merge gate, and a ticket is opened with "
    "the owner. A quarantined test older than 14 days is deleted or fixed, no exceptions.",
)
E(
    "flaky_refund_test",
    A,
    "lessons",
    "pt",
    "teste instável estorno",
    "O teste instável de estorno parcial falhava quando rodava perto da meia-noite: o fixture criava a "
    "venda ontem em UTC e hoje em São Paulo. Congelamos o tempo com time-machine no teste.",
)
E(
    "load_test",
    A,
    "lessons",
    "en",
    "load-test performance",
    "Black Friday load test with k6 at 3x last year's peak: payments-api held 2,400 charges/s but the "
    "ledger consumer lag grew to 9 minutes. Added two more partitions and consumers before the event.",
)
E(
    "regression_suite",
    A,
    "projects",
    "pt",
    "regressão testes",
    "Suíte de regressão do checkout: 120 casos manuais reduzidos para 35 depois de automatizar os fluxos de "
    "cartão, Pix e boleto. Roda antes de cada release com o checklist no TestRail.",
)
E(
    "qa_tasks",
    A,
    "tasks",
    "en",
    "qa todo",
    "- [ ] Pact contract for the refunds endpoint\n- [ ] E2E for the 3-D Secure challenge flow\n- [x] "
    "seed script for staging merchants\n- [ ] test boleto expiry on weekends and holidays",
)
E(
    "qa_tasks_pt",
    A,
    "tasks",
    "pt",
    "qa todo",
    "- [ ] Testar o app em Android 8 com pouca memória\n- [ ] Validar acessibilidade com TalkBack e "
    "VoiceOver\n- [ ] Revisar casos de teste do repasse D+1",
)
E(
    "handoff_qa",
    A,
    "handoffs",
    "en",
    "qa handoff",
    "[User]: is staging ready for the Checkout v3 regression? [Agent]: Staging has the release candidate "
    "3.0.0-rc.4; 33 of 35 regression cases pass. Two failures in boleto on holidays, ticket CHK-812 "
    "assigned to backend.",
)
E(
    "handoff_qa_pt",
    A,
    "handoffs",
    "pt",
    "qa handoff",
    "Passagem de sessão: rodei a regressão do app 3.9 no Galaxy A10 e no iPhone 8. Bug novo: o "
    "comprovante do Pix sai cortado em telas pequenas (MOB-331). Resto aprovado para a loja.",
)
E(
    "test_data",
    A,
    "decisions",
    "en",
    "test-data staging",
    "Staging never gets production data. A seed script creates 200 fake merchants with realistic sales "
    "using Faker (pt_BR) and anonymized distributions; it runs after every staging database reset.",
)
E(
    "boleto_holiday",
    A,
    "lessons",
    "pt",
    "boleto feriado bug",
    "Bug de boleto: o vencimento que caía em feriado bancário não era prorrogado para o dia útil seguinte, "
    "e o sistema cobrava multa. Agora usamos o calendário da Febraban e temos teste para Carnaval e "
    "Corpus Christi.",
)
E(
    "contract_lesson",
    A,
    "lessons",
    "en",
    "contract-tests api",
    "The mobile app broke in production when payments-api renamed amount to amount_cents; no consumer test "
    "caught it. That incident is why Pact contract tests became mandatory for the BFFs.",
)
E(
    "mutation_testing",
    A,
    "projects",
    "en",
    "testing quality",
    "Pilot of mutation testing with mutmut on the ledger package: 71% mutation score; surviving mutants "
    "were mostly in fee rounding branches, which got new tests.",
)
E(
    "bug_triage",
    A,
    "decisions",
    "pt",
    "bugs triagem",
    "Triagem de bugs: P1 (dinheiro errado ou pagamento fora) corrige na hora; P2 na sprint atual; P3 vai "
    "para o backlog. Bug sem passos para reproduzir volta para quem abriu.",
)

Q("q", "en", "what is our test strategy for money-moving flows?", "test_strategy")
Q("q", "pt", "podemos usar cartão real nos testes de integração?", "sandbox_acquirer")
Q("q", "en", "what do we do with flaky tests?", "flaky_quarantine")
Q("q", "pt", "por que o teste de estorno parcial falhava à meia-noite?", "flaky_refund_test")
Q("q", "en", "what did the Black Friday load test show?", "load_test")
Q("q", "en", "is staging ready for the Checkout v3 regression?", "handoff_qa")
Q("q", "en", "why are Pact contract tests mandatory?", "contract_lesson", "test_strategy")
Q("q", "pt", "como priorizamos bugs?", "bug_triage")
Q("p", "en", "can staging contain real customer records?", "test_data")
Q(
    "p",
    "pt",
    "cobrança de multa indevida quando o vencimento cai em dia sem expediente bancário",
    "boleto_holiday",
)
Q("p", "en", "seeding the pre-production environment with fake shops", "test_data")
Q("t", "en", "mutaton score ledger", "mutation_testing")
Q("t", "pt", "regresão do checkout TestRail", "regression_suite")
Q("t", "en", "quarantne flaky tests", "flaky_quarantine")
Q("t", "pt", "comprovante cortado telas pequnas", "handoff_qa_pt")
Q("k", "en", "k6 consumer lag partitions", "load_test")
Q("k", "pt", "TalkBack VoiceOver Android 8", "qa_tasks_pt")
Q("x", "en", "Pact contr refund", "qa_tasks")

# =============================================================================================
# More entries per agent: near-duplicates in vocabulary (database, cache, deploy, webhook, tests)
# about different subjects, so that a keyword match alone does not find the answer.
# =============================================================================================
A = "backend"
E(
    "b_cache_fx",
    A,
    "decisions",
    "en",
    "cache redis fx",
    "FX rates are cached in Redis for 5 minutes per currency pair; the provider charges per call and rates "
    "inside a checkout session are locked anyway.",
)
E(
    "b_db_index",
    A,
    "lessons",
    "en",
    "postgres index",
    "Adding an index on transactions(merchant_id, created_at) without CONCURRENTLY blocked writes for 3 "
    "minutes in staging. Always use CREATE INDEX CONCURRENTLY in a separate non-atomic migration.",
)
E(
    "b_deploy_freeze",
    A,
    "decisions",
    "en",
    "deploy freeze",
    "Deploy freeze for payments services from Nov 20 to Dec 2 (Black Friday and Cyber Monday); only "
    "hotfixes approved by the incident commander.",
)
E(
    "b_webhook_sig_pt",
    A,
    "tasks",
    "pt",
    "webhooks todo",
    "- [ ] Documentar a verificação da assinatura HMAC dos webhooks com exemplos em PHP e Node\n"
    "- [ ] Adicionar timestamp na assinatura para evitar replay",
)
E(
    "b_pix_refund",
    A,
    "lessons",
    "pt",
    "pix devolução",
    "Devolução de Pix só pode ser feita em até 90 dias e exige o endToEndId original; pedidos de estorno "
    "mais antigos viram transferência manual feita pelo financeiro.",
)
E(
    "b_sql_timeout",
    A,
    "decisions",
    "en",
    "postgres timeout",
    "statement_timeout is 5 s for the web role and 10 minutes for the reporting role; long reports run "
    "asynchronously in export-worker and the merchant gets an email with the CSV link.",
)
E(
    "b_handoff_ledger",
    A,
    "handoffs",
    "en",
    "ledger handoff",
    "Handoff: ledger migration 0042 (add posting_group_id) is written and tested on a copy of production; "
    "it backfills in batches of 10k. Run it Tuesday night, Ana is aware.",
)
E(
    "b_handoff_cache_pt",
    A,
    "handoffs",
    "pt",
    "cache handoff",
    "[User]: o cache das taxas do lojista está desatualizado [Agent]: O TTL local é de 60 s, então a "
    "mudança aparece em até um minuto. Adicionei invalidação por evento merchant.updated para casos urgentes.",
)
E(
    "b_async_emails",
    A,
    "decisions",
    "en",
    "email notifications",
    "Transactional emails (receipts, payout notices) go through SendGrid from notification-worker; "
    "templates in MJML versioned in the repo. Marketing emails are out of scope for engineering.",
)
E(
    "b_cnab_pt",
    A,
    "projects",
    "pt",
    "boleto cnab",
    "Integração de boleto com o Banco Aurora: remessa CNAB 240 enviada por SFTP às 18h, retorno lido às 7h. "
    "Boletos pagos aparecem no extrato do lojista até as 9h.",
)
E(
    "b_installments",
    A,
    "decisions",
    "en",
    "installments cards",
    "Credit card installments: up to 12x; the merchant chooses whether interest is paid by the buyer or "
    "absorbed. Interest table comes from the acquirer daily.",
)
E(
    "b_python_version",
    A,
    "tasks",
    "en",
    "python upgrade todo",
    "- [ ] move payments-api to Python 3.12 (waiting on the OOM investigation)\n- [ ] replace "
    "requests with httpx in the acquirer clients\n- [x] drop Python 3.10 from CI",
)
E(
    "b_deadlock",
    A,
    "lessons",
    "en",
    "postgres deadlock",
    "Deadlocks in the payouts batch: two workers locked merchant balances in different orders. Always lock "
    "rows ordered by merchant_id (SELECT ... FOR UPDATE ORDER BY id).",
)
E(
    "b_pagination",
    A,
    "decisions",
    "pt",
    "api paginação",
    "A API pública usa paginação por cursor (starting_after) e não por página/offset: offset grande ficava "
    "lento e pulava registros quando entravam vendas novas.",
)
E(
    "b_graphql_partner",
    A,
    "projects",
    "en",
    "partner-api",
    "Partner API for ERPs (Bling, Tiny, Omie): REST with OAuth2 client credentials, read-only access to "
    "sales and payouts. Each ERP is a separate OAuth client with its own rate limit.",
)
E(
    "b_error_codes",
    A,
    "decisions",
    "en",
    "api errors",
    "API errors follow RFC 9457 problem+json with a stable machine code (card_declined, "
    "insufficient_funds); messages are in the language of the Accept-Language header.",
)
E(
    "b_tasks_pt",
    A,
    "tasks",
    "pt",
    "backend todo",
    "- [ ] Expor taxa efetiva por venda no endpoint de extrato\n- [ ] Remover coluna legacy_balance depois "
    "da virada do ledger\n- [ ] Aumentar cobertura de testes do cálculo de juros",
)
E(
    "b_lesson_retry_pt",
    A,
    "lessons",
    "pt",
    "adquirente retentativa",
    "Retentar autorização de cartão depois de timeout do adquirente sem consultar o status primeiro gerou "
    "autorizações em dobro. Agora consultamos a transação pelo nosso id antes de tentar de novo.",
)
E(
    "b_handoff_celery",
    A,
    "handoffs",
    "en",
    "celery handoff",
    "Where I stopped: the email queue is drained; added max_retries=5 to send_receipt and a dead-letter "
    "queue. Still need a Grafana panel for the queue length.",
)
E(
    "b_money_split",
    A,
    "decisions",
    "pt",
    "split ledger",
    "No split de pagamento, a taxa da Pagora sai sempre do recebedor principal; centavos de arredondamento "
    "ficam com o recebedor principal também, para a soma bater com o valor da venda.",
)
E(
    "b_db_vacuum",
    A,
    "lessons",
    "en",
    "postgres vacuum",
    "The webhook_deliveries table bloated to 180 GB because autovacuum could not keep up with updates. "
    "Tuned autovacuum_vacuum_scale_factor to 0.02 for that table and partitioned it by month.",
)

A = "frontend"
E(
    "f_cache_sw",
    A,
    "decisions",
    "en",
    "cache pwa",
    "No service worker on the checkout: a stale cached checkout once showed an old price for a merchant. "
    "The portal uses a service worker only for static assets.",
)
E(
    "f_deploy_preview",
    A,
    "lessons",
    "en",
    "deploy vercel",
    "Vercel preview deployments were publicly reachable and one got indexed by Google. Previews now "
    "require Vercel authentication and send X-Robots-Tag: noindex.",
)
E(
    "f_pt_errors",
    A,
    "lessons",
    "pt",
    "ux erros cartão",
    "Mensagens de recusa de cartão genéricas ('transação não autorizada') geravam chamados no suporte. "
    "Agora mostramos o motivo traduzido (saldo insuficiente, cartão vencido) quando o adquirente informa.",
)
E(
    "f_charts",
    A,
    "decisions",
    "en",
    "charts",
    "Charts in the portal use Recharts; we tried ECharts but the bundle was 3x larger and we only need "
    "line and bar charts.",
)
E(
    "f_handoff_dash",
    A,
    "handoffs",
    "en",
    "dashboard handoff",
    "Session handoff: sales dashboard now shows the payout status card. The chart tooltip still formats "
    "BRL without the thousands separator in en-US locale; fix pending.",
)
E(
    "f_tasks_en",
    A,
    "tasks",
    "en",
    "frontend todo",
    "- [ ] migrate checkout-web to the Next.js app router\n- [ ] remove the old Angular assets from the "
    "CDN\n- [ ] add Datadog RUM to the portal",
)
E(
    "f_input_money_pt",
    A,
    "decisions",
    "pt",
    "formulário moeda",
    "Campos de valor usam entrada da direita para a esquerda (digitar 1234 mostra R$ 12,34), como nos "
    "apps de banco, e não aceitam colar texto com símbolo de moeda.",
)
E(
    "f_monorepo",
    A,
    "decisions",
    "en",
    "monorepo",
    "Frontend code lives in one pnpm + Turborepo monorepo: checkout-web, merchant portal, design system and "
    "shared validation. Remote cache on S3 makes CI builds 4x faster.",
)
E(
    "f_lesson_ios_safari",
    A,
    "lessons",
    "en",
    "safari bug",
    "The Pix copy button did nothing on iOS Safari 15 because navigator.clipboard requires a user gesture "
    "in the same tick; we were calling it after an await. Now falls back to a hidden textarea.",
)
E(
    "f_handoff_pt2",
    A,
    "handoffs",
    "pt",
    "checkout handoff",
    "[User]: o botão de copiar código Pix funciona no iPhone? [Agent]: Agora sim, usei o fallback com "
    "textarea escondida. Testado no iOS 15 e 17; falta o Android antigo.",
)
E(
    "f_seo",
    A,
    "projects",
    "en",
    "seo marketing-site",
    "Marketing site is separate from the product (Astro on Cloudflare Pages) and owned by growth; "
    "engineering only reviews the pricing page calculator.",
)
E(
    "f_lesson_locale_pt",
    A,
    "lessons",
    "pt",
    "i18n bug",
    "O checkout em inglês mostrava datas no formato dd/mm porque o locale vinha fixo do servidor. Agora o "
    "locale vem do navegador com fallback para pt-BR.",
)
E(
    "f_tasks_pt2",
    A,
    "tasks",
    "pt",
    "frontend todo",
    "- [ ] Skeleton de carregamento na lista de vendas\n- [ ] Filtro por bandeira do cartão\n- [ ] "
    "Corrigir tooltip do gráfico sem separador de milhar",
)
E(
    "f_decision_auth",
    A,
    "decisions",
    "en",
    "auth frontend",
    "The portal never stores tokens in localStorage; the BFF keeps the session in an httpOnly cookie and "
    "talks to Keycloak server-side.",
)
E(
    "f_web_deploy_pt",
    A,
    "lessons",
    "pt",
    "deploy cloudfront",
    "Deploy do portal quebrou porque o GitHub Actions invalidou o CloudFront antes de terminar o upload no "
    "S3. Trocamos a ordem: upload, depois invalidação só do index.html.",
)

A = "devops"
E(
    "d_cache_cdn",
    A,
    "decisions",
    "en",
    "cdn cache cloudflare",
    "Static assets from all frontends are served through CloudFront with one-year immutable cache on "
    "hashed files; Cloudflare sits in front only for WAF and DNS.",
)
E(
    "d_db_backup_test",
    A,
    "lessons",
    "en",
    "backup postgres",
    "We found during the audit that nobody had ever restored an RDS snapshot. Now a monthly job restores "
    "the latest snapshot into an isolated account and runs checksums on the ledger tables.",
)
E(
    "d_deploy_window_pt",
    A,
    "decisions",
    "pt",
    "deploy janela",
    "Deploys em produção de segunda a quinta, das 10h às 16h; sexta só hotfix. Exceção precisa de aval do "
    "líder de plantão.",
)
E(
    "d_kafka_msk",
    A,
    "decisions",
    "en",
    "kafka msk",
    "Kafka runs on Amazon MSK with 3 brokers across AZs, replication factor 3 and min.insync.replicas 2. "
    "We considered Confluent Cloud but data residency in sa-east-1 was a requirement.",
)
E(
    "d_vpn",
    A,
    "decisions",
    "pt",
    "acesso rede",
    "Acesso à rede interna sem VPN: usamos Tailscale com ACLs por grupo e SSO do Keycloak. O bastion SSH "
    "foi desligado.",
)
E(
    "d_handoff_cost",
    A,
    "handoffs",
    "en",
    "finops handoff",
    "[User]: why did the AWS bill jump this month? [Agent]: NAT gateway data processing: the data team's "
    "new job pulls S3 data through the NAT. Suggested an S3 gateway endpoint; saves about US$ 3k/month.",
)
E(
    "d_lesson_hpa",
    A,
    "lessons",
    "en",
    "kubernetes autoscaling",
    "HPA on CPU did not scale notification-worker during a campaign because the work is I/O bound. "
    "Switched to KEDA scaling on SQS queue length.",
)
E(
    "d_tasks_pt",
    A,
    "tasks",
    "pt",
    "infra todo",
    "- [ ] Migrar os buckets de logs para classe Intelligent-Tiering\n- [ ] Criar alarme de custo por "
    "conta\n- [ ] Documentar o processo de criação de novo serviço",
)
E(
    "d_new_service",
    A,
    "projects",
    "en",
    "platform golden-path",
    "Golden path for new services: a Backstage template creates the repo, Helm values, ArgoCD app, "
    "dashboards and alerts. A new service reaches staging in under an hour.",
)
E(
    "d_lesson_cronjob",
    A,
    "lessons",
    "pt",
    "kubernetes cronjob",
    "O CronJob de conciliação rodou duas vezes no mesmo dia porque o concurrencyPolicy estava em Allow e "
    "o job anterior demorou. Mudamos para Forbid e tornamos o job idempotente.",
)
E(
    "d_grafana_alerts",
    A,
    "decisions",
    "en",
    "alerts",
    "Alerts must have a runbook link and an owner label; alerts without them are rejected by the "
    "alert-lint step in CI.",
)
E(
    "d_handoff_pt2",
    A,
    "handoffs",
    "pt",
    "cluster handoff",
    "Passagem: atualizei o Karpenter para a versão nova em homologação; os nós spot estão subindo com a AMI "
    "nova. Produção fica para quarta depois da janela de deploy.",
)
E(
    "d_istio_no",
    A,
    "decisions",
    "en",
    "service-mesh",
    "No service mesh for now. mTLS between services is handled at the ALB and with network policies; Istio "
    "was too heavy for a platform team of four.",
)
E(
    "d_disk_lesson",
    A,
    "lessons",
    "en",
    "disk",
    "Loki ingesters ran out of disk after a chatty debug log shipped to production. Added a per-tenant "
    "ingestion rate limit and a CI check blocking DEBUG level in production configs.",
)

A = "data"
E(
    "dt_cache_dash",
    A,
    "decisions",
    "en",
    "cache metabase",
    "Metabase question results are cached for 6 hours for heavy dashboards; finance dashboards bypass the "
    "cache because they are used at month close.",
)
E(
    "dt_db_replica",
    A,
    "lessons",
    "pt",
    "replica banco",
    "As consultas analíticas diretas na réplica do PostgreSQL causavam atraso de replicação e afetavam os "
    "relatórios dos lojistas. Proibimos acesso de BI à réplica; tudo passa pelo warehouse.",
)
E(
    "dt_deploy_dbt",
    A,
    "decisions",
    "en",
    "dbt deploy ci",
    "dbt changes deploy through CI: slim CI builds only modified models with state:modified+ against a "
    "clone of production; merge to main triggers the production job.",
)
E(
    "dt_handoff_gmv",
    A,
    "handoffs",
    "pt",
    "gmv handoff",
    "[User]: o GMV de ontem está certo? [Agent]: Bateu com o financeiro com diferença de 0,02%, explicada "
    "por estornos processados depois da meia-noite. Nenhuma ação necessária.",
)
E(
    "dt_tasks_en",
    A,
    "tasks",
    "en",
    "data todo",
    "- [ ] retire the old Redshift cluster snapshots\n- [ ] add merchant segment to the sales mart\n- [ ] "
    "write a glossary for finance metrics",
)
E(
    "dt_ltv",
    A,
    "projects",
    "en",
    "ltv ml",
    "Merchant LTV model: predicts 12-month net revenue per merchant for sales prioritization; retrained "
    "monthly; features from the sales mart.",
)
E(
    "dt_lesson_null",
    A,
    "lessons",
    "en",
    "sql bug",
    "Approval-rate dropped to 60% on the dashboard overnight: a new decline reason was NULL and the CASE "
    "expression counted NULLs as declines. Added an accepted_values test to the column.",
)
E(
    "dt_airflow_pt",
    A,
    "lessons",
    "pt",
    "airflow",
    "A DAG de repasses falhou em silêncio por três dias porque o on_failure_callback do Airflow estava "
    "quebrado. Agora todo DAG crítico tem teste de freshness no dbt como segunda camada de alerta.",
)
E(
    "dt_handoff_en",
    A,
    "handoffs",
    "en",
    "handoff data",
    "Where I stopped: the sales mart now has merchant_segment. Backfill for 2023 is running on the L "
    "warehouse, expected 40 minutes. Check the row counts before announcing it.",
)
E(
    "dt_decision_pt",
    A,
    "decisions",
    "pt",
    "dados acesso",
    "Acesso ao warehouse por papéis: ANALYST lê marts, ENGINEER lê staging, ninguém lê raw sem aprovação. "
    "Pedidos pelo Slack #dados-acesso com aprovação do dono do domínio.",
)
E(
    "dt_kafka_retention",
    A,
    "decisions",
    "en",
    "kafka retention",
    "Kafka topics for payments events keep 7 days of retention; the Iceberg archive is the long-term "
    "copy. Replays older than 7 days come from S3.",
)
E(
    "dt_survey_pt",
    A,
    "projects",
    "pt",
    "pesquisa lojistas",
    "Pesquisa trimestral com lojistas: respostas ficam no Typeform e são carregadas no warehouse pelo "
    "Airbyte; o NPS é calculado no dbt e aparece no painel de produto.",
)

A = "mobile"
E(
    "m_cache_images",
    A,
    "decisions",
    "en",
    "cache images",
    "Product images in the app are cached with expo-image (memory + disk, 200 MB cap); catalog prices are "
    "never cached offline to avoid selling at an old price.",
)
E(
    "m_deploy_stores_pt",
    A,
    "lessons",
    "pt",
    "loja apple",
    "A Apple rejeitou a versão 3.7 porque a tela de exclusão de conta não estava acessível dentro do app. "
    "Adicionamos o fluxo em Configurações > Conta; aprovação saiu em 2 dias.",
)
E(
    "m_db_local",
    A,
    "decisions",
    "en",
    "sqlite mobile",
    "Local storage in the app is SQLite via expo-sqlite with Drizzle for queries; we evaluated WatermelonDB "
    "but sync is simple enough to own.",
)
E(
    "m_handoff_en2",
    A,
    "handoffs",
    "en",
    "mobile handoff",
    "[User]: did the Tap to Pay spike work? [Agent]: Yes on a Pixel 7 with the Adyen test card, 4 s from tap "
    "to approval. Samsung devices need a newer SDK; spike notes in docs/tap-to-pay.md.",
)
E(
    "m_tasks_en2",
    A,
    "tasks",
    "en",
    "mobile todo",
    "- [ ] add Sentry release health to the app\n- [ ] support Android 15 edge-to-edge\n- [ ] request the "
    "Apple Tap to Pay entitlement again with the new use-case text",
)
E(
    "m_lesson_font",
    A,
    "lessons",
    "en",
    "android ux",
    "Large system font on Android cut the sale amount on the home screen. All amount labels now use "
    "adjustsFontSizeToFit and we test with 200% font scale.",
)
E(
    "m_decision_pt",
    A,
    "decisions",
    "pt",
    "navegação mobile",
    "Navegação do app com Expo Router baseado em arquivos; links profundos mapeiam direto para as rotas, "
    "sem tabela manual.",
)
E(
    "m_lesson_battery_pt",
    A,
    "lessons",
    "pt",
    "bateria android",
    "Reclamação de bateria: o app fazia polling de vendas a cada 10 s em segundo plano. Trocamos por push "
    "silencioso e polling só com o app aberto.",
)
E(
    "m_project_en",
    A,
    "projects",
    "en",
    "mobile catalog",
    "Catalog feature in the app: merchants register products with photo and price and share a mini store "
    "link; orders become payment links. Target: 20% of active merchants in 3 months.",
)
E(
    "m_handoff_pt3",
    A,
    "handoffs",
    "pt",
    "mobile handoff",
    "[User]: como está o catálogo no app? [Agent]: Cadastro de produto com foto pronto; falta o link da "
    "lojinha e o limite de 50 produtos no plano grátis. Bruno revisa o PR amanhã.",
)

A = "security"
E(
    "s_cache_headers",
    A,
    "lessons",
    "en",
    "cache security",
    "A misconfigured CDN rule cached an authenticated API response with another merchant's balance for 30 "
    "seconds. API responses now send Cache-Control: private, no-store and the CDN bypasses /api/*.",
)
E(
    "s_db_access",
    A,
    "decisions",
    "en",
    "database access",
    "Production database access for humans only through a break-glass role with a ticket, 1-hour "
    "credentials from Vault, and session recording. Read-only by default.",
)
E(
    "s_deploy_signing_pt",
    A,
    "decisions",
    "pt",
    "deploy supply-chain",
    "Só imagens assinadas no CI podem ir para produção; o admission controller bloqueia imagem sem "
    "assinatura. Builds locais nunca são publicados.",
)
E(
    "s_handoff_en",
    A,
    "handoffs",
    "en",
    "security handoff",
    "Handoff: reviewed the KYC bucket policy; public access block was on, but the upload role could list "
    "every merchant's folder. Scoped it to the merchant prefix; needs a test in staging.",
)
E(
    "s_lesson_logs_pt",
    A,
    "lessons",
    "pt",
    "logs pii",
    "Descobrimos CPFs completos nos logs do notification-worker por causa de um print de debug. Apagamos "
    "os logs afetados, adicionamos filtro de PII e regra no linter contra print.",
)
E(
    "s_bug_bounty",
    A,
    "projects",
    "en",
    "bug-bounty",
    "Private bug bounty on HackerOne with 40 invited researchers; scope is the public API, checkout and "
    "the app. Payouts from US$ 100 to US$ 5k. Triage by the security team within 3 business days.",
)
E(
    "s_tasks_en",
    A,
    "tasks",
    "en",
    "security todo",
    "- [ ] enable GuardDuty in all accounts\n- [ ] review S3 bucket policies for public access\n- [ ] "
    "quarterly access review for production roles",
)
E(
    "s_password_pt",
    A,
    "decisions",
    "pt",
    "senhas",
    "Senhas dos lojistas com Argon2id; bloqueio progressivo após 5 tentativas erradas e checagem contra "
    "senhas vazadas (Have I Been Pwned) no cadastro e na troca.",
)
E(
    "s_webhook_verify",
    A,
    "lessons",
    "en",
    "webhooks partner",
    "An integration partner accepted our webhooks without checking the signature, and an attacker posted "
    "fake 'paid' events to their endpoint. We now include signature verification in the SDKs by default.",
)
E(
    "s_handoff_pt",
    A,
    "handoffs",
    "pt",
    "segurança handoff",
    "[User]: já dá para ligar o GuardDuty? [Agent]: Liguei nas contas de produção e dados; a de "
    "homologação gera muito alerta falso do scanner de vulnerabilidade, deixei regra de supressão para revisar.",
)

A = "pm"
E(
    "p_cache_feature",
    A,
    "projects",
    "en",
    "product analytics",
    "Payment links usage: 62% of small merchants use links sent via WhatsApp; the most requested feature is "
    "link expiry and a custom thank-you page.",
)
E(
    "p_db_request",
    A,
    "tasks",
    "pt",
    "pm todo",
    "- [ ] Priorizar pedido do Casa Nobre por relatório de vendas por vendedor\n- [ ] Responder o Banco "
    "Aurora sobre o piloto de boleto híbrido",
)
E(
    "p_deploy_comm",
    A,
    "decisions",
    "en",
    "release communication",
    "Release notes for merchants go out monthly in the portal changelog; breaking API changes are "
    "announced 90 days ahead by email and in the developer docs.",
)
E(
    "p_handoff_en2",
    A,
    "handoffs",
    "en",
    "pm handoff",
    "[User]: what did Casa Nobre ask for? [Agent]: A sales report per salesperson, with commission. We "
    "could use the metadata field on charges; estimated 2 weeks. Waiting for prioritization.",
)
E(
    "p_lesson_pt",
    A,
    "lessons",
    "pt",
    "lançamento",
    "Lançamos o link de pagamento parcelado sem avisar o suporte; em dois dias foram 300 chamados sobre "
    "juros. Lançamento só com FAQ e treinamento do suporte antes.",
)
E(
    "p_hybrid_boleto",
    A,
    "projects",
    "pt",
    "boleto pix",
    "Boleto híbrido (boleto com QR Code Pix) em piloto com o Banco Aurora: o pagador escolhe, e o Pix "
    "compensa na hora em vez de D+1.",
)
E(
    "p_okrs",
    A,
    "projects",
    "en",
    "okr",
    "H2 OKRs: increase monthly active merchants to 250k, keep payments availability at 99.95%, reduce "
    "support contacts per 1k transactions from 4.1 to 3.",
)
E(
    "p_decision_pt2",
    A,
    "decisions",
    "pt",
    "antecipação",
    "Não vamos oferecer antecipação de recebíveis de cartão este ano; o repasse D+1 do Pix cobre a "
    "necessidade de caixa do lojista pequeno e evita risco de crédito.",
)

A = "qa"
E(
    "q_cache_test",
    A,
    "lessons",
    "en",
    "cache testing",
    "A test passed locally and failed in CI because the local Redis still had cached merchant settings "
    "from a previous run. Tests now use a fresh Redis database number and flush on setup.",
)
E(
    "q_db_fixtures",
    A,
    "decisions",
    "pt",
    "testes banco",
    "Testes de backend rodam contra PostgreSQL real em container, não SQLite: já tivemos bug de JSONB e de "
    "lock que o SQLite escondia.",
)
E(
    "q_deploy_smoke",
    A,
    "decisions",
    "en",
    "deploy smoke",
    "After every production deploy, a smoke job creates a R$ 1.00 Pix charge and a card authorization in "
    "the test merchant and refunds both; failure triggers automatic rollback.",
)
E(
    "q_handoff_en",
    A,
    "handoffs",
    "en",
    "qa handoff",
    "Session handoff: wrote the E2E for the 3-D Secure challenge using the acquirer sandbox card ending "
    "1096. It passes in Chromium and WebKit; Firefox is skipped because the ACS page blocks it.",
)
E(
    "q_lesson_pt",
    A,
    "lessons",
    "pt",
    "testes app",
    "Bug de parcelamento escapou porque os testes do app usavam sempre 1x. Criamos tabela de casos com "
    "1x, 2x, 6x e 12x, com e sem juros, e o teste roda os quatro.",
)
E(
    "q_tasks_en",
    A,
    "tasks",
    "en",
    "qa todo",
    "- [ ] visual regression for the dark mode screens\n- [ ] exploratory session on the catalog feature\n"
    "- [ ] update the test plan for Tap to Pay",
)
E(
    "q_accessibility",
    A,
    "projects",
    "pt",
    "acessibilidade",
    "Meta de acessibilidade: checkout e portal em conformidade com WCAG 2.1 AA até dezembro; auditoria "
    "externa contratada e testes automáticos com axe no CI.",
)
E(
    "q_perf_pt",
    A,
    "lessons",
    "pt",
    "performance teste",
    "O teste de carga do extrato mostrou p95 de 4 s com 100 usuários: faltava índice por lojista e data. "
    "Com o índice, o p95 caiu para 300 ms.",
)

# =============================================================================================
# Short notes: one-liners agents store between tasks (mostly distractors)
# =============================================================================================
for agent, category, lang, tags, content in [
    (
        "backend",
        "tasks",
        "en",
        "todo",
        "- [ ] bump Django to 5.1.3 for the security fix\n- [ ] check the Adyen client timeout (currently 30 s, too high)",
    ),
    (
        "backend",
        "lessons",
        "en",
        "redis",
        "Redis KEYS command in a cleanup script froze the idempotency cluster for 2 s; use SCAN with a count.",
    ),
    (
        "backend",
        "handoffs",
        "en",
        "handoff",
        "Handoff: payout batch for Oct 14 failed for 12 merchants with invalid Pix keys; emailed them via support, retry scheduled for tomorrow 08:00.",
    ),
    (
        "backend",
        "decisions",
        "en",
        "queue sqs",
        "Notification fan-out uses SNS + SQS, not Kafka: messages are independent, no ordering needed, and the consumers are Lambda-friendly.",
    ),
    (
        "backend",
        "projects",
        "en",
        "webhooks",
        "Webhook dispatcher handles about 4M deliveries per day; 0.3% go to retries, mostly merchants returning 5xx during their own deploys.",
    ),
    (
        "backend",
        "lessons",
        "pt",
        "pix chaves",
        "Chave Pix aleatória do lojista mudou e os repasses falharam; agora validamos a chave no DICT antes de cada lote.",
    ),
    (
        "backend",
        "tasks",
        "pt",
        "todo",
        "- [ ] Revisar o índice da tabela de webhooks\n- [ ] Mover a geração de PDF de nota para o export-worker",
    ),
    (
        "backend",
        "decisions",
        "en",
        "http",
        "Outbound HTTP to acquirers uses httpx with a 10 s total timeout and no automatic retries; retries are decided by the payment state machine.",
    ),
    (
        "backend",
        "lessons",
        "en",
        "json",
        "A merchant sent amounts as strings with commas ('12,50'); the API now rejects non-integer amounts with a clear error instead of parsing locale formats.",
    ),
    (
        "backend",
        "handoffs",
        "pt",
        "handoff",
        "[User]: o extrato mostra taxa errada? [Agent]: Não, a taxa mostrada é a nominal; a efetiva com parcelamento só entra depois da tarefa de taxa efetiva por venda.",
    ),
    (
        "frontend",
        "tasks",
        "en",
        "todo",
        "- [ ] replace the custom date picker with the design system one\n- [ ] audit third-party scripts on checkout",
    ),
    (
        "frontend",
        "lessons",
        "en",
        "css",
        "The installments dropdown was cut off inside the checkout iframe on small screens; use a native select on mobile.",
    ),
    (
        "frontend",
        "decisions",
        "en",
        "testing",
        "Component tests use Vitest and Testing Library; snapshot tests are banned except for the design system tokens.",
    ),
    (
        "frontend",
        "handoffs",
        "en",
        "handoff",
        "Where I stopped: payment link editor supports custom thank-you message; the preview renders in an iframe, still need max length validation (280 chars).",
    ),
    (
        "frontend",
        "projects",
        "pt",
        "portal",
        "Nova área de disputas no portal: o lojista vê o motivo do chargeback, o prazo e envia comprovantes. Lançamento junto com o fluxo de evidências do backend.",
    ),
    (
        "frontend",
        "lessons",
        "pt",
        "analytics",
        "Eventos de analytics duplicados no checkout por causa do StrictMode do React em desenvolvimento chegando ao build de homologação.",
    ),
    (
        "frontend",
        "decisions",
        "pt",
        "navegadores",
        "Suporte de navegadores: duas últimas versões de Chrome, Safari, Firefox e Edge, mais Safari iOS 15; nada de IE.",
    ),
    (
        "devops",
        "tasks",
        "en",
        "todo",
        "- [ ] move CI runners to Graviton\n- [ ] enable VPC flow logs in the data account",
    ),
    (
        "devops",
        "lessons",
        "en",
        "deploy",
        "A deploy of notification-worker rolled out a bad config to all pods at once because maxUnavailable was 100%; default is now 25%.",
    ),
    (
        "devops",
        "decisions",
        "en",
        "dns",
        "DNS is managed in Route 53 through Terraform; Cloudflare proxies only the public hostnames.",
    ),
    (
        "devops",
        "handoffs",
        "en",
        "handoff",
        "[User]: can we delete the old Jenkins server? [Agent]: Two jobs still run there (nightly DB dump to the legacy BI and a cert check). Migrate both to GitHub Actions first.",
    ),
    (
        "devops",
        "projects",
        "pt",
        "plataforma",
        "Time de plataforma: 4 pessoas, cuida do cluster, CI/CD, observabilidade e custos. Pedido novo entra pelo quadro Plataforma no Linear.",
    ),
    (
        "devops",
        "lessons",
        "pt",
        "rede",
        "Queda parcial: o NAT gateway de uma zona caiu e os pods daquela zona perderam saída para o adquirente. Agora temos um NAT por zona.",
    ),
    (
        "devops",
        "decisions",
        "pt",
        "imagens docker",
        "Imagens base distroless para serviços Python e Node; shell só na imagem de debug, que nunca vai para produção.",
    ),
    (
        "devops",
        "tasks",
        "pt",
        "todo",
        "- [ ] Automatizar o teste de restauração de backup do Loki\n- [ ] Revisar limites de CPU do ledger-service",
    ),
    (
        "data",
        "tasks",
        "en",
        "todo",
        "- [ ] add dbt exposures for the finance dashboards\n- [ ] deprecate the legacy cohort tables",
    ),
    (
        "data",
        "decisions",
        "en",
        "naming",
        "dbt naming: stg_ for 1:1 source models, int_ for intermediate, fct_/dim_ in marts; one model per file, YAML docs next to it.",
    ),
    (
        "data",
        "lessons",
        "en",
        "snowflake",
        "A marts rebuild failed at month close because a finance analyst was running a 2-hour query on the same warehouse; transforms now have their own warehouse.",
    ),
    (
        "data",
        "handoffs",
        "en",
        "handoff",
        "[User]: can I get payouts by merchant segment? [Agent]: Added fct_payouts joined with dim_merchant.segment; Metabase question 'Payouts by segment' is shared in the Finance collection.",
    ),
    (
        "data",
        "lessons",
        "pt",
        "metabase",
        "Filtro de data do Metabase usava o fuso do servidor; lojistas do Nordeste viam vendas de ontem. Padronizamos tudo em BRT.",
    ),
    (
        "data",
        "projects",
        "pt",
        "risco",
        "Projeto Limites de Risco: calcular limite diário por lojista com base no histórico de chargeback e tempo de casa, revisado toda semana.",
    ),
    (
        "data",
        "decisions",
        "pt",
        "airflow",
        "DAGs do Airflow ficam no repositório data-pipelines e sobem pelo CI; editar DAG direto no bucket do MWAA é proibido.",
    ),
    (
        "mobile",
        "tasks",
        "en",
        "todo",
        "- [ ] update React Native to 0.76\n- [ ] remove the unused camera permission on iOS",
    ),
    (
        "mobile",
        "lessons",
        "en",
        "ios",
        "iOS review flagged the app for asking location without a clear purpose string; location is now requested only when enabling nearby customers.",
    ),
    (
        "mobile",
        "decisions",
        "en",
        "feature-flags",
        "The app reads feature flags from the mobile-bff at launch and caches them for 24 hours so flags work offline.",
    ),
    (
        "mobile",
        "handoffs",
        "en",
        "handoff",
        "Session handoff: Android 15 edge-to-edge done for home and sales screens; the payment link screen still draws under the navigation bar.",
    ),
    (
        "mobile",
        "projects",
        "pt",
        "mobile",
        "App para maquininha: versão do Pagora Carteira rodando em terminais Android POS com impressora térmica, piloto com 50 lojistas.",
    ),
    (
        "mobile",
        "lessons",
        "pt",
        "android",
        "Terminais POS com Android 7 não rodam o app novo (mínimo Android 8); o piloto da maquininha usa terminais novos.",
    ),
    (
        "security",
        "tasks",
        "en",
        "todo",
        "- [ ] threat model for the Tap to Pay flow\n- [ ] renew the PCI AoC with the QSA",
    ),
    (
        "security",
        "decisions",
        "en",
        "logging",
        "Security logs (Keycloak, CloudTrail, WAF) go to a separate account with write-once S3 buckets; engineers cannot delete them.",
    ),
    (
        "security",
        "lessons",
        "en",
        "oauth",
        "An ERP partner stored our OAuth client secret in a public mobile app; we now issue PKCE public clients for apps and never secrets.",
    ),
    (
        "security",
        "handoffs",
        "pt",
        "handoff",
        "Passagem: o modelo de ameaças do Tap to Pay está no rascunho; principal risco é app adulterado em aparelho com root. Conversar com o Thiago sobre atestação do Play Integrity.",
    ),
    (
        "security",
        "projects",
        "pt",
        "pci",
        "Auditoria PCI DSS anual com QSA externo em novembro; escopo: card-vault, rede do CDE e processos de acesso.",
    ),
    (
        "security",
        "decisions",
        "pt",
        "mobile segurança",
        "O app usa Play Integrity e App Attest para bloquear instalações adulteradas antes de habilitar o Tap to Pay.",
    ),
    (
        "pm",
        "tasks",
        "en",
        "todo",
        "- [ ] draft the Tap to Pay pricing proposal\n- [ ] review the churn interview notes",
    ),
    (
        "pm",
        "lessons",
        "en",
        "discovery",
        "We built the invoice feature before talking to accountants; half the fields were wrong for Brazilian NF-e. Discovery interviews first, always.",
    ),
    (
        "pm",
        "handoffs",
        "pt",
        "handoff",
        "[User]: qual a prioridade do catálogo? [Agent]: Segunda prioridade do Q4, depois da cobrança recorrente; meta de 20% dos lojistas ativos usando em 3 meses.",
    ),
    (
        "pm",
        "decisions",
        "en",
        "tap-to-pay pricing",
        "Tap to Pay pricing: same rate as card-present in our partner terminals, 1.99% debit and 3.19% credit, free for the first 3 months.",
    ),
    (
        "qa",
        "tasks",
        "en",
        "todo",
        "- [ ] test plan for recurring billing retries\n- [ ] update device lab inventory",
    ),
    (
        "qa",
        "lessons",
        "en",
        "e2e",
        "E2E tests shared one test merchant and stepped on each other's balances when run in parallel; every worker now creates its own merchant.",
    ),
    (
        "qa",
        "decisions",
        "en",
        "device-lab",
        "Device lab: 12 physical phones covering the most common Android models in our user base plus iPhone 8, 12 and 15; cloud devices for the long tail.",
    ),
    (
        "qa",
        "handoffs",
        "pt",
        "handoff",
        "[User]: a regressão do boleto passou? [Agent]: Passou, inclusive vencimento no Carnaval depois da correção do calendário. Liberado para produção.",
    ),
    (
        "qa",
        "lessons",
        "pt",
        "testes",
        "Testes de snapshot do app quebravam a cada mudança de texto e ninguém revisava o diff; removemos e ficamos com testes de comportamento.",
    ),
]:
    E(f"n{len(ENTRIES):03d}", agent, category, lang, tags, content)

E(
    "x_webhook_ordering",
    "backend",
    "lessons",
    "en",
    "webhooks ordering",
    "Merchants received payment.refunded before payment.succeeded when retries overlapped. Every webhook "
    "now carries a monotonically increasing sequence per payment and the docs tell integrators to ignore "
    "older sequences.",
)
E(
    "x_search_tx",
    "backend",
    "tasks",
    "en",
    "search todo",
    "- [ ] search transactions by last four digits of the card\n- [ ] add unaccent to the merchant name "
    "search so 'Sao Paulo' matches 'São Paulo'",
)
E(
    "x_cache_stampede",
    "backend",
    "lessons",
    "en",
    "cache redis incident",
    "Cache stampede on the merchant catalog: the popular key expired and 3,000 requests hit PostgreSQL at "
    "once. Fixed with request coalescing and jittered TTLs.",
)
E(
    "x_db_conn_leak",
    "backend",
    "lessons",
    "en",
    "database connections",
    "Connections leaked from the export-worker because a generator held a server-side cursor open after "
    "the client disconnected; wrap cursors in a context manager.",
)
E(
    "x_deploy_migrations",
    "backend",
    "decisions",
    "en",
    "deploy migrations",
    "Database migrations run as a separate Kubernetes Job before the rollout, never on pod startup; "
    "migrations must be backward compatible with the previous release (expand, then contract).",
)
E(
    "x_ledger_reconcile",
    "backend",
    "handoffs",
    "en",
    "ledger handoff",
    "[User]: the ledger and the bank statement differ by R$ 312.40 [Agent]: It is a payout sent at 23:58 "
    "and settled by the bank after midnight; it appears in tomorrow's statement. Not a bug.",
)
E(
    "x_frontend_error_boundary",
    "frontend",
    "lessons",
    "en",
    "react errors",
    "A failing chart crashed the whole portal page; every route now has an error boundary that shows a "
    "retry card and reports to Sentry.",
)
E(
    "x_frontend_perf_img",
    "frontend",
    "decisions",
    "en",
    "images performance",
    "Merchant logos on the checkout are resized by an image CDN and served as AVIF/WebP with width hints; "
    "uploads above 2 MB are rejected.",
)
E(
    "x_devops_secrets_leak",
    "devops",
    "lessons",
    "en",
    "secrets helm",
    "A Helm values file with a staging database password was committed to the deploy repo; rotated within "
    "the hour and added a pre-receive hook that blocks high-entropy strings.",
)
E(
    "x_devops_multi_account",
    "devops",
    "decisions",
    "en",
    "aws accounts",
    "AWS accounts per environment (prod, staging, data, security, sandbox) under Organizations with SCPs "
    "that forbid disabling CloudTrail and creating IAM users.",
)
E(
    "x_devops_postgres_upgrade",
    "devops",
    "tasks",
    "en",
    "postgres upgrade todo",
    "- [ ] upgrade RDS PostgreSQL 15 to 16 using blue/green deployment\n- [ ] test pg_stat_statements "
    "after the upgrade\n- [ ] update the PgBouncer image",
)
E(
    "x_data_finance_close",
    "data",
    "projects",
    "en",
    "finance close",
    "Month close support: by the 3rd business day the data team delivers revenue, fees, chargebacks and "
    "payouts per merchant to finance, reconciled with the ledger to the cent.",
)
E(
    "x_data_sampling",
    "data",
    "lessons",
    "en",
    "analytics",
    "A conversion analysis used a 10% sample of events and the funnel looked 3 points better than reality "
    "because sampling was by event, not by session. Sample by session id.",
)
E(
    "x_mobile_crash_reporting",
    "mobile",
    "decisions",
    "en",
    "crash sentry mobile",
    "Crash reporting in the app is Sentry (not Firebase Crashlytics) so that mobile and web errors live in "
    "one place with the same release naming.",
)
E(
    "x_mobile_login_lesson",
    "mobile",
    "lessons",
    "en",
    "login mobile",
    "After the Keycloak upgrade the app logged everyone out because refresh tokens issued by the old realm "
    "key were rejected. Keep the old signing key active for 30 days during rotations.",
)
E(
    "x_security_ddos",
    "security",
    "lessons",
    "en",
    "ddos incident",
    "A layer-7 DDoS hit the public status page, not the API; the page was served by our own cluster. Moved "
    "it to a hosted status provider.",
)
E(
    "x_security_vendor",
    "security",
    "decisions",
    "en",
    "vendors",
    "New vendors that process personal data need a security questionnaire and a DPA signed before any "
    "integration, including trials.",
)
E(
    "x_pm_invoice",
    "pm",
    "projects",
    "en",
    "invoices nfe",
    "Invoice (NF-e) issuance project: merchants can issue service invoices automatically after each sale "
    "through a partner API. Scoped to São Paulo and Rio municipalities first.",
)
E(
    "x_pm_pricing_lesson",
    "pm",
    "lessons",
    "en",
    "pricing",
    "Raising the boleto fee from R$ 2.49 to R$ 3.49 without notice led 40 merchants to complain publicly; "
    "price changes need 30 days notice in the portal.",
)
E(
    "x_qa_release_gate",
    "qa",
    "decisions",
    "en",
    "release gate",
    "Release gate: no open P1/P2 bugs, regression suite green, and crash-free sessions above 99.5% in "
    "the beta channel for 48 hours before a mobile release goes to 100%.",
)
E(
    "x_qa_exploratory",
    "qa",
    "projects",
    "en",
    "exploratory testing",
    "Exploratory testing sessions: one hour every sprint per squad, charters written by QA, notes in the "
    "QA wiki; found 30% of last quarter's production bugs before release.",
)
E(
    "x_pt_cache_bff",
    "mobile",
    "lessons",
    "pt",
    "cache bff",
    "O mobile-bff cacheava a tela inicial por lojista por 5 minutos e o lojista não via a venda que "
    "acabou de fazer. Cache removido para vendas; ficou só para banners.",
)
E(
    "x_pt_deploy_sexta",
    "devops",
    "lessons",
    "pt",
    "deploy incidente",
    "Deploy de sexta às 18h no webhook-dispatcher parou as entregas por 2 horas e ninguém do time estava "
    "online. Foi o motivo da regra de janela de deploy.",
)
E(
    "x_pt_db_particao",
    "data",
    "decisions",
    "pt",
    "banco partição",
    "A tabela de eventos do ledger no PostgreSQL é particionada por mês com pg_partman; partições com mais "
    "de 18 meses são exportadas para o Iceberg e removidas.",
)

Q("q", "en", "why do merchants receive refunded before succeeded webhooks?", "x_webhook_ordering")
Q("q", "en", "when do database migrations run during a deploy?", "x_deploy_migrations")
Q("q", "en", "why was there a deploy freeze in November?", "b_deploy_freeze")
Q("q", "en", "why did the app log everyone out after the Keycloak upgrade?", "x_mobile_login_lesson")
Q("q", "pt", "por que não fazemos deploy na sexta?", "d_deploy_window_pt", "x_pt_deploy_sexta")
Q("q", "pt", "por que o lojista não via a venda que acabou de fazer no app?", "x_pt_cache_bff")
Q("q", "pt", "até quando dá para devolver um Pix?", "b_pix_refund")
Q("q", "en", "how do we handle deadlocks in the payouts batch?", "b_deadlock")
Q("q", "en", "what did Casa Nobre ask for?", "p_handoff_en2", "p_db_request")
Q("p", "en", "thousands of requests hit the database at once when a hot entry expired", "x_cache_stampede")
Q(
    "p",
    "en",
    "an authenticated response with another seller's money was served from the edge",
    "s_cache_headers",
)
Q("p", "pt", "o app gastava energia consultando vendas em segundo plano", "m_lesson_battery_pt")
Q("p", "en", "who may query production tables directly and how?", "s_db_access")
Q("p", "pt", "paginação com deslocamento ficava lenta e pulava registros", "b_pagination")
Q("p", "en", "huge table kept growing because cleanup of dead rows lagged", "b_db_vacuum")
Q("p", "en", "nobody had ever tried bringing a snapshot back", "d_db_backup_test")
Q("p", "pt", "posso usar SQLite nos testes do backend?", "q_db_fixtures")
Q("p", "en", "the copy code button did nothing on older iPhones", "f_lesson_ios_safari", "f_handoff_pt2")
Q("t", "en", "cache stampde jittered TTL", "x_cache_stampede")
Q("t", "en", "autovacum bloat webhook deliveries", "b_db_vacuum")
Q("t", "pt", "senhas Argon2id bloqueio progresivo", "s_password_pt")
Q("t", "en", "Tailscle bastion VPN", "d_vpn")
Q("t", "en", "service worker checkout stale prcie", "f_cache_sw")
Q("t", "pt", "particionado por mês pg_partmn", "x_pt_db_particao")
Q("t", "en", "KEDA autoscaling notificaton-worker SQS", "d_lesson_hpa")
Q("t", "en", "smoke job after producton deploy", "q_deploy_smoke")
Q("k", "en", "installments 12x interest", "b_installments")
Q("k", "en", "RFC 9457 problem+json", "b_error_codes")
Q("k", "pt", "boleto híbrido Banco Aurora", "p_hybrid_boleto", "p_db_request")
Q("k", "en", "Backstage golden path", "d_new_service")
Q("k", "en", "NAT gateway S3 endpoint", "d_handoff_cost")
Q("k", "pt", "concurrencyPolicy Forbid CronJob", "d_lesson_cronjob")
Q("k", "en", "HackerOne bug bounty scope", "s_bug_bounty")
Q("k", "en", "Recharts ECharts bundle", "f_charts")
Q("k", "pt", "antecipação de recebíveis D+1", "p_decision_pt2", "competitor_note")
Q("x", "en", "monor Turbore", "f_monorepo")
Q("x", "pt", "Argon senha vaz", "s_password_pt")
Q("x", "en", "statement_time reporting", "b_sql_timeout")
Q("x", "en", "NF-e invoi munic", "x_pm_invoice")
Q("x", "pt", "maquin POS piloto", "~App para maquininha", "~Terminais POS com Android 7")
Q("x", "en", "Pix copy butt Safari", "f_lesson_ios_safari")


# =============================================================================================
# Validation and output
# =============================================================================================
_WORD = re.compile(r"\w+")


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower())}


def _strip_accents(word: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", word) if not unicodedata.combining(c))


def typo_pairs(question: str, answer_text: str) -> list[tuple[str, str]]:
    """(typo, intended) pairs: question words absent from the answer but one edit from a 5+ letter word in it."""
    answer_words = _words(answer_text)
    pairs = []
    for w in _words(question) - answer_words:
        for a in answer_words:
            if len(a) >= 5 and edit_distance_one(w, a):
                pairs.append((w, a))
                break
    return pairs


def prefix_pairs(question: str, answer_text: str) -> list[tuple[str, str]]:
    """(prefix, word) pairs: question words that are a proper prefix of a word in the answer."""
    answer_words = _words(answer_text)
    pairs = []
    for w in _words(question) - answer_words:
        for a in sorted(answer_words):
            if len(w) >= 3 and a.startswith(w):
                pairs.append((w, a))
                break
    return pairs


def build() -> dict:
    rng = random.Random(20240601)
    labels: dict[str, str] = {}
    entries = []
    for i, (label, agent, category, lang, tags, content) in enumerate(ENTRIES, 1):
        if label in labels:
            sys.exit(f"duplicate label {label}")
        key = f"e{i:03d}"
        labels[label] = key
        entries.append(
            {
                "key": key,
                "agent": agent,
                "category": category,
                "content": content,
                "tags": tags,
                "lang": lang,
                "age_days": rng.randint(0, 400),
                "importance": round(rng.uniform(0.2, 0.9), 2),
            }
        )
    by_key = {e["key"]: e for e in entries}

    def resolve(ref: str) -> str:
        if ref.startswith("~"):
            hits = [e["key"] for e in entries if e["content"].startswith(ref[1:])]
            if len(hits) != 1:
                sys.exit(f"content reference {ref!r} matches {len(hits)} entries")
            return hits[0]
        if ref not in labels:
            sys.exit(f"unknown answer label {ref!r}")
        return labels[ref]

    questions, seen, problems = [], set(), []
    for kind, lang, q, refs in QUESTIONS:
        if q.lower() in seen:
            problems.append(f"duplicate question: {q}")
        seen.add(q.lower())
        answers = [resolve(r) for r in refs]
        if not 1 <= len(answers) <= 3 or len(set(answers)) != len(answers):
            problems.append(f"bad answers for {q!r}")
        text = " ".join(by_key[a]["content"] for a in answers)
        if kind == "typo" and not typo_pairs(q, text):
            problems.append(f"typo question without a one-edit typo of an answer word: {q!r}")
        if kind == "prefix" and not prefix_pairs(q, text):
            problems.append(f"prefix question without a truncated answer word: {q!r}")
        if kind == "keywords" and not 2 <= len(q.split()) <= 4:
            problems.append(f"keywords question should have 2-4 words: {q!r}")
        answer_langs = {by_key[a]["lang"] for a in answers}
        questions.append(
            {"q": q, "answers": answers, "lang": lang if answer_langs == {lang} else "mixed", "kind": kind}
        )
    if problems:
        sys.exit("\n".join(problems))
    return {"entries": entries, "questions": questions}


def main() -> None:
    data = build()
    out = Path(__file__).with_name("quality.json")
    out.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    entries, questions = data["entries"], data["questions"]
    print(f"{len(entries)} entries, {len(questions)} questions -> {out}")
    print("entries by lang:", dict(Counter(e["lang"] for e in entries)))
    print("entries by agent:", dict(Counter(e["agent"] for e in entries)))
    print("entries by category:", dict(Counter(e["category"] for e in entries)))
    print("questions by kind:", dict(Counter(q["kind"] for q in questions)))
    print("questions by lang:", dict(Counter(q["lang"] for q in questions)))
    print("questions by kind/lang:", dict(sorted(Counter((q["kind"], q["lang"]) for q in questions).items())))


if __name__ == "__main__":
    main()
